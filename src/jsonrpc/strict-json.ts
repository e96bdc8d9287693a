/**
 * A strict JSON scanner over bytes (RFC 8259, nothing more): proves that bytes the proxy is
 * about to splice into are one JSON value, so that what it writes around them is valid JSON.
 * It accepts only what every conforming reader accepts: no trailing commas, comments, single
 * quotes, bare words, NaN, raw control characters or invalid UTF-8. Linear in the bytes, no
 * recursion (nesting is counted on an explicit stack, and bounded).
 */
import { isUtf8 } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** The escapes a JSON string may hold after a backslash (besides `u` and four hex digits). */
const SIMPLE_ESCAPES = new Set([QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];

/**
 * The names of an object's own members, each decoded (a key written with escapes is read as
 * what it means: `"\u0072esultType"` is `resultType`), when `b` is exactly one JSON object
 * (surrounding whitespace allowed) nesting at most `maxDepth` levels; undefined otherwise.
 */
export function strictObjectKeys(b: Buffer, maxDepth: number): string[] | undefined {
  if (!isUtf8(b)) return undefined;
  const keys: string[] = [];
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return undefined;
  /** The containers open around `i`: true for an object, false for an array. */
  const open: boolean[] = [];
  // Each turn reads one value (or closes a container) at `i`, then what follows it.
  let expectKey = false;
  for (;;) {
    i = skipSpace(b, i);
    if (expectKey) {
      if (b[i] !== QUOTE) return undefined;
      const end = stringEnd(b, i);
      if (end < 0) return undefined;
      if (open.length === 1) keys.push(decodeKey(b, i, end));
      i = skipSpace(b, end);
      if (b[i] !== COLON) return undefined;
      i = skipSpace(b, i + 1);
      expectKey = false;
    }
    const c = b[i];
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (open.length >= maxDepth) return undefined;
      const isObject = c === OPEN_OBJECT;
      open.push(isObject);
      i = skipSpace(b, i + 1);
      if (b[i] === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        open.pop();
        i++;
      } else {
        expectKey = isObject;
        continue;
      }
    } else {
      const end = c === QUOTE ? stringEnd(b, i) : c === MINUS || (c >= ZERO && c <= NINE) ? numberEnd(b, i) : literalEnd(b, i);
      if (end < 0) return undefined;
      i = end;
    }
    // After a value: a comma, or the close of the container it is in.
    for (;;) {
      if (open.length === 0) return skipSpace(b, i) === b.length ? keys : undefined;
      i = skipSpace(b, i);
      const inObject = open[open.length - 1];
      if (b[i] === COMMA) {
        i++;
        expectKey = inObject;
        break;
      }
      if (b[i] !== (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) return undefined;
      open.pop();
      i++;
    }
  }
}

function skipSpace(b: Buffer, i: number): number {
  for (let c = b[i]; c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = b[++i]);
  return i;
}

/** The index after the string that opens at `start`, or -1 when it is not a valid JSON string. */
function stringEnd(b: Buffer, start: number): number {
  for (let i = start + 1; i < b.length; i++) {
    const c = b[i];
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      const e = b[++i];
      if (e === 0x75) {
        for (let k = 1; k <= 4; k++) if (!isHex(b[i + k])) return -1;
        i += 4;
      } else if (!SIMPLE_ESCAPES.has(e)) return -1;
    }
  }
  return -1;
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}

/** The index after the number at `i` (`-? int frac? exp?`, no leading zeros), or -1. */
function numberEnd(b: Buffer, i: number): number {
  if (b[i] === MINUS) i++;
  if (b[i] === ZERO) i++;
  else if (b[i] >= 0x31 && b[i] <= NINE) i = digitsEnd(b, i);
  else return -1;
  if (b[i] === DOT) {
    const end = digitsEnd(b, i + 1);
    if (end === i + 1) return -1;
    i = end;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    if (b[i] === PLUS || b[i] === MINUS) i++;
    const end = digitsEnd(b, i);
    if (end === i) return -1;
    i = end;
  }
  return i;
}

function digitsEnd(b: Buffer, i: number): number {
  while (b[i] >= ZERO && b[i] <= NINE) i++;
  return i;
}

function literalEnd(b: Buffer, i: number): number {
  for (const word of LITERALS) if (b.compare(word, 0, word.length, i, Math.min(i + word.length, b.length)) === 0) return i + word.length;
  return -1;
}

/** A key as it reads: its bytes, or, when it holds an escape, what JSON makes of it. */
function decodeKey(b: Buffer, start: number, end: number): string {
  const inner = b.subarray(start + 1, end - 1);
  return inner.includes(BACKSLASH) ? (JSON.parse(b.toString('utf8', start, end)) as string) : inner.toString('utf8');
}
