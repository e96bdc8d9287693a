/**
 * The facts a text or a JSON value carries, to check that reshaping changed its shape and not
 * what a client can know: numbers (by value: `8.0` and `8` are one fact), URLs, and words of two
 * or more letters (names, labels and keys; case-insensitive, `camelCase` and `snake_case` split
 * into words), and `null`. Markup is not a fact: the names of inline formatting tags (`<b>`,
 * `</em>`) and the language label of a code fence are skipped. One linear scan per string;
 * values are walked without recursion.
 */
import type { Budget } from '../budget.js';
import { isPlainObject } from './json.js';

/** Inline formatting tags `plain-text` strips; their names are markup, not facts. */
export const FORMATTING_TAGS = new Set([
  'b',
  'i',
  'em',
  'strong',
  'code',
  'br',
  'p',
  'u',
  's',
  'del',
  'ins',
  'sup',
  'sub',
  'kbd',
  'mark',
  'small',
  'span',
]);

const URL_END = new Set([' ', '\t', '\n', '\r', '<', '>', '"', "'", '`', ')', ']', '|', '\\', '*']);
const URL_TRAILER = new Set(['.', ',', ';', ':', '!', '?']);

/** Visits each fact of `value`; `visit` returns true to stop. Returns true when stopped. */
type Visit = (fact: string) => boolean | void;

/**
 * Receives the facts of a value as they are found; a true return stops the scan. A number comes
 * by value (as text it is `#` and the number: `#8`), so that a set of facts need not spell out
 * every number it holds.
 */
export interface FactSink {
  text(fact: string): boolean | void;
  number(value: number): boolean | void;
}

const asText = (visit: Visit): FactSink => ({ text: visit, number: (n) => visit(`#${n}`) });

/** The facts of `value` (a string, or any JSON value: keys, strings, numbers, booleans). */
export function factsOf(value: unknown, budget?: Budget): Set<string> {
  const facts = new Set<string>();
  eachFact(
    value,
    asText((f) => void facts.add(f)),
    budget,
  );
  return facts;
}

/** The first fact of `value` that `known` lacks, or undefined when none is missing. */
export function firstMissingFact(value: unknown, known: Set<string>, budget?: Budget): string | undefined {
  let missing: string | undefined;
  eachFact(
    value,
    asText((f) => {
      if (known.has(f)) return false;
      missing = f;
      return true;
    }),
    budget,
  );
  return missing;
}

/** Every fact of `before` that `after` lacks (at most `limit`). */
export function missingFacts(before: unknown, after: unknown, limit = 20): string[] {
  const known = factsOf(after);
  const missing = new Set<string>();
  eachFact(
    before,
    asText((f) => {
      if (!known.has(f)) missing.add(f);
      return missing.size >= limit;
    }),
  );
  return [...missing];
}

/** Keys remembered as read: enough for the rows of any table, while an object of many keys is not copied into a set. */
const KEYS_KEPT = 256;

/** Passes each fact of `value` to `sink`; true when the sink stopped the scan. */
export function eachFact(value: unknown, sink: FactSink, budget?: Budget): boolean {
  const stack: unknown[] = [value];
  const keys = new Set<string>(); // rows repeat their keys: read each once (the first KEYS_KEPT keys)
  while (stack.length > 0) {
    const v = stack.pop();
    budget?.check();
    if (typeof v === 'string') {
      if (textFacts(v, sink, budget)) return true;
    } else if (typeof v === 'number') {
      if (sink.number(Math.abs(v))) return true; // a sign is a dash in text: not told apart
    } else if (typeof v === 'boolean' || v === null) {
      if (sink.text(String(v))) return true;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    } else if (isPlainObject(v)) {
      for (const key in v) {
        if (!keys.has(key)) {
          if (keys.size < KEYS_KEPT) keys.add(key);
          if (textFacts(key, sink, budget)) return true;
        }
        stack.push(v[key]);
      }
    }
  }
  return false;
}

/** The facts of one string, in order; true when the sink stopped the scan. */
function textFacts(text: string, sink: FactSink, budget?: Budget): boolean {
  const n = text.length;
  let i = 0;
  while (i < n) {
    budget?.check();
    const c = text.charCodeAt(i);
    let end = i + 1;
    if ((c === 0x60 || c === 0x7e) && atLineStart(text, i) && text.startsWith(c === 0x60 ? '```' : '~~~', i)) {
      end = text.indexOf('\n', i); // a fence and its language label
      if (end === -1) end = n;
    } else if (isDigit(c)) {
      end = numberEnd(text, i);
      if (sink.number(numberAt(text, i, end))) return true;
    } else if (isLetter(c)) {
      if ((c === 0x68 || c === 0x48) && startsWithScheme(text, i)) {
        end = urlEnd(text, i);
        if (sink.text(`url:${trimUrl(text, i, end)}`)) return true;
      } else {
        end = wordEnd(text, i);
        if (!isFormattingTag(text, i, end) && wordsIn(text, i, end, sink)) return true;
      }
    }
    i = end;
  }
  return false;
}

/** The value of the number from `start` to `end`: up to 15 digits alone are summed exactly, without a string. */
function numberAt(text: string, start: number, end: number): number {
  if (end - start <= 15) {
    let n = 0;
    let i = start;
    for (; i < end; i++) {
      const c = text.charCodeAt(i);
      if (!isDigit(c)) break;
      n = n * 10 + (c - 0x30);
    }
    if (i === end) return n;
  }
  return Number(text.slice(start, end));
}

/** Whether only up to three spaces stand between `i` and the start of its line. */
function atLineStart(text: string, i: number): boolean {
  for (let j = i - 1; j >= i - 4; j--) {
    if (j < 0 || text[j] === '\n') return true;
    if (text[j] !== ' ') return false;
  }
  return false;
}

function numberEnd(text: string, start: number): number {
  let i = start;
  while (isDigit(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) === 0x2e /* . */ && isDigit(text.charCodeAt(i + 1))) {
    i++;
    while (isDigit(text.charCodeAt(i))) i++;
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    let j = i + 1;
    if (text[j] === '+' || text[j] === '-') j++;
    if (isDigit(text.charCodeAt(j))) {
      while (isDigit(text.charCodeAt(j))) j++;
      i = j;
    }
  }
  return i;
}

function wordEnd(text: string, start: number): number {
  let i = start;
  while (i < text.length && isLetter(text.charCodeAt(i))) i++;
  return i;
}

/** The words of one run of letters (camelCase split: a word starts again at an upper-case letter after a lower-case one). */
function wordsIn(text: string, start: number, end: number, sink: FactSink): boolean {
  let from = start;
  for (let i = start + 1; i <= end; i++) {
    if (i < end && !(isUpper(text.charCodeAt(i)) && isLower(text.charCodeAt(i - 1)))) continue;
    if (i - from >= 2 && sink.text(text.slice(from, i).toLowerCase())) return true;
    from = i;
  }
  return false;
}

/** `<b>`, `</em>`: the name of an inline formatting tag. */
function isFormattingTag(text: string, start: number, end: number): boolean {
  if (end - start > 6) return false;
  const before = text.charCodeAt(start - 1);
  const open = before === 0x3c /* < */ || (before === 0x2f /* / */ && text.charCodeAt(start - 2) === 0x3c);
  return open && FORMATTING_TAGS.has(text.slice(start, end).toLowerCase());
}

function urlEnd(text: string, start: number): number {
  let i = start;
  while (i < text.length && !URL_END.has(text[i])) i++;
  return i;
}

function trimUrl(text: string, start: number, end: number): string {
  let e = end;
  while (e > start && URL_TRAILER.has(text[e - 1])) e--;
  return text.slice(start, e);
}

function startsWithScheme(text: string, i: number): boolean {
  const head = text.slice(i, i + 8).toLowerCase();
  return head.startsWith('http://') || head === 'https://';
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isUpper = (c: number) => (c >= 0x41 && c <= 0x5a) || (c > 0x7f && String.fromCharCode(c) !== String.fromCharCode(c).toLowerCase());
const isLower = (c: number) => (c >= 0x61 && c <= 0x7a) || (c > 0x7f && String.fromCharCode(c) !== String.fromCharCode(c).toUpperCase());
const LETTER = /\p{L}/u;
function isLetter(c: number): boolean {
  if (c < 0x80) return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
  return LETTER.test(String.fromCharCode(c));
}
