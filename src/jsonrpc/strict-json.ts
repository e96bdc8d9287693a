/**
 * A strict JSON scanner over bytes (RFC 8259, nothing more): proves that an upstream's bytes the
 * proxy relays or splices into are one JSON value, so that what it writes is valid JSON. It
 * accepts only what every conforming reader accepts: no trailing commas, comments, single quotes,
 * bare words, NaN, raw control characters or leading zeros (UTF-8 validity is the caller's one
 * native check). Linear in the bytes and without recursion: nesting is counted on an explicit
 * stack, and bounded. Every read is within bounds (V8 slows down every element load of a
 * function that ever reads past the end).
 */

/** The bytes of JSON's structure (envelope.ts reads with them too). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** What a failed scan returns: the bytes are not one JSON value, or nest deeper than allowed. */
export const INVALID = -1;
export const TOO_DEEP = -2;

/** Bytes a string's scan stops at: its end, an escape, or a control character (which JSON forbids raw). */
const STOPS = new Uint8Array(256);
STOPS.fill(1, 0, 0x20);
STOPS[QUOTE] = 1;
STOPS[BACKSLASH] = 1;
/** What may follow a backslash (besides `u` and four hex digits). */
const ESCAPES = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPES[c.charCodeAt(0)] = 1;
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;
const LITERALS = ['true', 'false', 'null'].map((word) => [...Buffer.from(word)]);

/**
 * Scans the one JSON value that starts at `start` (no whitespace before it), nesting at most
 * `maxDepth` levels; `members`, when given and the value is an object, gets the names of its own
 * members, each as it reads (a key written with escapes, `"\u0072esultType"`, is `resultType`).
 * Returns the index after the value, or INVALID or TOO_DEEP.
 */
export function scanValue(b: Buffer, start: number, maxDepth: number, members?: string[]): number {
  const n = b.length;
  /** The containers open around `i`: true for an object, false for an array. */
  const open: boolean[] = [];
  let i = start;
  let expectKey = false;
  // Each turn reads one value (after its key, in an object) or opens a container, then what follows.
  for (;;) {
    if (expectKey) {
      if (i >= n || b[i] !== QUOTE) return INVALID;
      const keyEnd = stringEnd(b, i);
      if (keyEnd < 0) return INVALID;
      if (members && open.length === 1) members.push(keyOf(b, i, keyEnd));
      i = skipSpace(b, keyEnd);
      if (i >= n || b[i] !== COLON) return INVALID;
      i = skipSpace(b, i + 1);
      expectKey = false;
    }
    if (i >= n) return INVALID;
    const c = b[i];
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (open.length >= maxDepth) return TOO_DEEP;
      const isObject = c === OPEN_OBJECT;
      i = skipSpace(b, i + 1);
      if (i < n && b[i] === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) i++;
      else {
        open.push(isObject);
        expectKey = isObject;
        continue;
      }
    } else {
      i = c === QUOTE ? stringEnd(b, i) : c === MINUS || (c >= ZERO && c <= NINE) ? numberEnd(b, i) : literalEnd(b, i);
      if (i < 0) return INVALID;
    }
    // After a value: the end, a comma, or the close of the container it is in.
    for (;;) {
      if (open.length === 0) return i;
      i = skipSpace(b, i);
      if (i >= n) return INVALID;
      const inObject = open[open.length - 1];
      if (b[i] === COMMA) {
        i = skipSpace(b, i + 1);
        expectKey = inObject;
        break;
      }
      if (b[i] !== (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) return INVALID;
      open.pop();
      i++;
    }
  }
}

export function skipSpace(b: Buffer, i: number): number {
  const n = b.length;
  while (i < n) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** The index after the string that opens at `start`, or INVALID. */
function stringEnd(b: Buffer, start: number): number {
  const n = b.length;
  let i = start + 1;
  for (;;) {
    while (i < n && STOPS[b[i]] === 0) i++; // the plain bytes, in a tight loop
    if (i >= n) return INVALID;
    const c = b[i];
    if (c === QUOTE) return i + 1;
    if (c !== BACKSLASH || i + 1 >= n) return INVALID; // a raw control character, or a backslash at the end
    const e = b[i + 1];
    if (e === 0x75) {
      if (i + 5 >= n || !HEX[b[i + 2]] || !HEX[b[i + 3]] || !HEX[b[i + 4]] || !HEX[b[i + 5]]) return INVALID;
      i += 6;
    } else if (ESCAPES[e]) i += 2;
    else return INVALID;
  }
}

/** The index after the number at `i` (`-? int frac? exp?`, no leading zeros), or INVALID. */
function numberEnd(b: Buffer, i: number): number {
  const n = b.length;
  if (b[i] === MINUS) i++;
  if (i < n && b[i] === ZERO) i++;
  else if (i < n && b[i] > ZERO && b[i] <= NINE) i = digitsEnd(b, i);
  else return INVALID;
  if (i < n && b[i] === DOT) {
    const end = digitsEnd(b, i + 1);
    if (end === i + 1) return INVALID;
    i = end;
  }
  if (i < n && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < n && (b[i] === PLUS || b[i] === MINUS)) i++;
    const end = digitsEnd(b, i);
    if (end === i) return INVALID;
    i = end;
  }
  return i;
}

function digitsEnd(b: Buffer, i: number): number {
  const n = b.length;
  while (i < n && b[i] >= ZERO && b[i] <= NINE) i++;
  return i;
}

function literalEnd(b: Buffer, i: number): number {
  next: for (const word of LITERALS) {
    if (i + word.length > b.length) continue;
    for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) continue next;
    return i + word.length;
  }
  return INVALID;
}

/** A key as it reads: its bytes, or, when it holds an escape, what JSON makes of it. */
function keyOf(b: Buffer, start: number, end: number): string {
  const inner = b.subarray(start + 1, end - 1);
  return inner.includes(BACKSLASH) ? (JSON.parse(b.toString('utf8', start, end)) as string) : inner.toString('utf8');
}
