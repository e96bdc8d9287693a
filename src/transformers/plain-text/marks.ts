/**
 * What the markup of one line pairs up into, marked per position for inline.ts to write the
 * line: code spans (a run of backticks and the next run as long) and emphasis runs (an opener
 * and the closer that matches it), with the links inline.ts finds. Typed arrays reused from
 * line to line hold it all: nothing is made per character or per line.
 */
import type { Budget } from '../budget.js';

const BACKTICK = 0x60;
const BACKSLASH = 0x5c;
const STAR = 0x2a;
const UNDERSCORE = 0x5f;

/** ASCII punctuation (CommonMark's list), by character code. */
export const PUNCT = new Uint8Array(128);
for (const ch of '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~') PUNCT[ch.charCodeAt(0)] = 1;

/** What starts at a position (`Marks.action`). */
export const DROP_RUN = 1; // an emphasis run that paired up: `size` characters dropped
export const LINK_OPEN = 2; // the `[` of a link
export const LINK_CLOSE = 3; // the `]` of a link: write `links.suffix[size]`, go on at `links.end[size]`

/**
 * Per-position marks for the current line, grown as needed. The positions marked are recorded,
 * and only those are cleared for the next line (also when a line was cut short by its budget).
 */
class Marks {
  /** Index after a code span's closing run, + 1 (0: no span starts here). */
  codeEnd = new Int32Array(256);
  /** Index after a `)` matching the `(` here, + 1. */
  parenEnd = new Int32Array(256);
  action = new Uint8Array(256);
  size = new Int32Array(256);
  /** The emphasis opener below the one here on its stack, + 1 (see `Openers`). */
  below = new Int32Array(256);

  /** Positions given a `codeEnd`, `parenEnd` or `action` since the last reset. */
  private marked = new Int32Array(64);
  private count = 0;

  /** Call with every position given a `codeEnd`, `parenEnd` or `action`. */
  mark(i: number): void {
    this.marked = grown(this.marked, this.count);
    this.marked[this.count++] = i;
  }

  reset(length: number): void {
    if (this.action.length < length + 2) {
      const n = Math.max(length + 2, this.action.length * 2);
      this.codeEnd = new Int32Array(n);
      this.parenEnd = new Int32Array(n);
      this.action = new Uint8Array(n);
      this.size = new Int32Array(n);
      this.below = new Int32Array(n);
      this.count = 0;
      return;
    }
    for (let k = 0; k < this.count; k++) {
      const i = this.marked[k];
      this.codeEnd[i] = 0;
      this.parenEnd[i] = 0;
      this.action[i] = 0;
    }
    this.count = 0;
  }
}

export const marks = new Marks();

/**
 * Open emphasis runs, one stack per character and run length (runs of 1023 or more share one),
 * kept as linked lists through `Marks.below`: no arrays or maps are made per line. `top` holds
 * each stack's top + 1; `used` the stacks the line has touched, to clear them.
 */
const openers = { top: new Int32Array(3 * 1024), used: new Int32Array(64), count: 0 };

export function clearOpeners(): void {
  for (let k = 0; k < openers.count; k++) openers.top[openers.used[k]] = 0;
  openers.count = 0;
}

/** Code span runs of the line: where each starts, its length, and the next run as long (-1: none). */
let runStart = new Int32Array(16);
let runLength = new Int32Array(16);
let next = new Int32Array(16);
/** By run length: the nearest run of that length to the right, + 1, while `codeSpans` pairs them. */
let byLength = new Int32Array(64);

/** `a`, or a copy twice as long when `used` has reached its length. */
export function grown(a: Int32Array<ArrayBuffer>, used: number): Int32Array<ArrayBuffer> {
  if (used < a.length) return a;
  const b = new Int32Array(Math.max(a.length * 2, used + 1));
  b.set(a);
  return b;
}

/**
 * Code spans: a run of n backticks up to the next run of exactly n. Marks `codeEnd`; true when
 * there is at least one span.
 */
export function codeSpans(line: string, budget?: Budget): boolean {
  let runs = 0;
  let longest = 0;
  for (let i = line.indexOf('`'); i !== -1; i = line.indexOf('`', i + 1)) {
    budget?.check();
    if (line.charCodeAt(i - 1) === BACKSLASH) continue;
    let len = 1;
    while (line.charCodeAt(i + len) === BACKTICK) len++;
    runStart = grown(runStart, runs);
    runLength = grown(runLength, runs);
    runStart[runs] = i;
    runLength[runs++] = len;
    if (len > longest) longest = len;
    i += len - 1;
  }
  // next[k]: the next run as long as run k (one right-to-left pass).
  next = grown(next, runs);
  byLength = grown(byLength, longest);
  for (let k = runs - 1; k >= 0; k--) {
    next[k] = byLength[runLength[k]] - 1;
    byLength[runLength[k]] = k + 1;
  }
  for (let k = 0; k < runs; k++) byLength[runLength[k]] = 0;
  let any = false;
  for (let k = 0; k < runs; k++) {
    const close = next[k];
    if (close === -1) continue;
    marks.codeEnd[runStart[k]] = runStart[close] + runLength[close] + 1;
    marks.mark(runStart[k]);
    any = true;
    k = close;
  }
  return any;
}

/** The run of `c` at `i`: marks it and its opener when it closes one; returns the index after it. */
export function delimiterRun(line: string, i: number, c: number, action: Uint8Array, size: Int32Array): number {
  let len = 1;
  while (line.charCodeAt(i + len) === c) len++;
  const before = kind(line.charCodeAt(i - 1));
  const after = kind(line.charCodeAt(i + len));
  const left = after !== SPACE && (after !== PUNCTUATION || before !== WORD);
  const right = before !== SPACE && (before !== PUNCTUATION || after !== WORD);
  const key = (c === STAR ? 0 : c === UNDERSCORE ? 1024 : 2048) + Math.min(len, 1023);
  const top = openers.top[key];
  if (right && (!left || after === PUNCTUATION) && top !== 0) {
    const open = top - 1;
    openers.top[key] = marks.below[open];
    action[open] = DROP_RUN;
    size[open] = len;
    action[i] = DROP_RUN;
    size[i] = len;
    marks.mark(open);
    marks.mark(i);
  } else if (left && (!right || before === PUNCTUATION)) {
    if (top === 0) {
      openers.used = grown(openers.used, openers.count);
      openers.used[openers.count++] = key;
    }
    marks.below[i] = top;
    openers.top[key] = i + 1;
  }
  return i + len;
}

const SPACE = 0;
const PUNCTUATION = 1;
const WORD = 2;

/** A character's kind for emphasis flanking (NaN, before the start or past the end, is space). */
function kind(c: number): number {
  if (c !== c || c === 0x20 || c === 0x09 || c === 0x0a) return SPACE;
  return c < 128 && PUNCT[c] === 1 ? PUNCTUATION : WORD;
}
