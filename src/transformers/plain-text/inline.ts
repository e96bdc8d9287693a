/**
 * Inline markdown to plain text in time linear in the line: code spans lose their backticks,
 * emphasis and strike-through markers that pair up are removed, links and images become
 * `text (target)`, autolinks lose their brackets, backslash escapes are resolved and inline
 * formatting tags (`<b>`, `<br>`) dropped. Pairs are found with stacks and precomputed
 * matches, never by searching ahead from every candidate. Unpaired markers stay as they are.
 *
 * This runs on every line of every text a client wants as plain text, so it works on
 * character codes and records what it finds in typed arrays indexed by position, reused from
 * line to line: no objects per character or per line.
 */
import type { Budget } from '../budget.js';
import { FORMATTING_TAGS } from '../_shared/facts.js';
import { clearOpeners, codeSpans, delimiterRun, DROP_RUN, grown, LINK_CLOSE, LINK_OPEN, marks, PUNCT } from './marks.js';

const [BACKTICK, BACKSLASH, OPEN_BRACKET, CLOSE_BRACKET, OPEN_PAREN, CLOSE_PAREN, BANG, LESS, GREATER, STAR, UNDERSCORE, TILDE] =
  Array.from('`\\[]()!<>*_~', (c) => c.charCodeAt(0));

/** A line without any of these has no markup. */
const ANY_SPECIAL = /[`[\]*_~<\\]/;
/** The characters that can be markup, by character code. */
const MARKUP = new Uint8Array(128);
for (const ch of '`[]*_~<\\()!') MARKUP[ch.charCodeAt(0)] = 1;
const NEXT_MARKUP = /[`[\]*_~<\\()!]/g;
/** Characters looked at one by one before a native scan takes over: markup is usually near, and a scan costs a call. */
const NEAR = 16;

/** The index of the next character at or after `from` that can be markup, or the line's length. */
function nextMarkup(line: string, from: number): number {
  const near = Math.min(line.length, from + NEAR);
  for (let i = from; i < near; i++) {
    const c = line.charCodeAt(i);
    if (c < 128 && MARKUP[c] === 1) return i;
  }
  if (near === line.length) return near;
  NEXT_MARKUP.lastIndex = near;
  return NEXT_MARKUP.test(line) ? NEXT_MARKUP.lastIndex - 1 : line.length;
}

/** Stacks and lists as typed arrays with their own top (setting an array's length is slow). */
let brackets = new Int32Array(64);
let parens = new Int32Array(64);
let pairs = new Int32Array(128); // open, close, open, close, …
const links = { suffix: [] as string[], end: [] as number[], count: 0 };

/**
 * `budget` is charged per markup character in every pass, so that even one huge line is cut
 * short in time. `hardBreak`: the line may end in a hard line break, a backslash, which is
 * dropped from the text (a line without markup has no backslash).
 */
export function inlineToText(line: string, budget?: Budget, hardBreak = false): string {
  if (!ANY_SPECIAL.test(line)) return line;
  const n = line.length;
  marks.reset(n);
  const hasCode = line.includes('`') && codeSpans(line, budget);
  markup(line, hasCode, budget);
  return emit(line, hasCode, hardBreak, budget);
}

/**
 * One pass outside code spans and backslash escapes: brackets and parentheses matched with
 * stacks (a `[text](target)` is a link), and emphasis (`*`, `_`) and strike-through (`~`) runs
 * that pair up: an opener followed by non-space, a closer preceded by non-space, same
 * character and length, never inside a word (so `snake_case` and `2*3*4` keep theirs).
 */
function markup(line: string, hasCode: boolean, budget?: Budget): void {
  const n = line.length;
  let bTop = 0;
  let pTop = 0;
  let pairCount = 0;
  let emphasis = false;
  const { codeEnd, parenEnd, action, size } = marks;
  for (let i = nextMarkup(line, 0); i < n; i = nextMarkup(line, i)) {
    budget?.check();
    const c = line.charCodeAt(i);
    if (c === BACKTICK && hasCode && codeEnd[i] !== 0) i = codeEnd[i] - 1;
    else if (c === BACKSLASH) i += 2;
    else if (c === OPEN_BRACKET) {
      brackets = grown(brackets, bTop);
      brackets[bTop++] = i++;
    } else if (c === CLOSE_BRACKET) {
      if (bTop > 0) {
        pairs = grown(pairs, pairCount + 1);
        pairs[pairCount++] = brackets[--bTop];
        pairs[pairCount++] = i;
      }
      i++;
    } else if (c === OPEN_PAREN) {
      parens = grown(parens, pTop);
      parens[pTop++] = i++;
    } else if (c === CLOSE_PAREN) {
      if (pTop > 0) {
        parenEnd[parens[--pTop]] = i + 1 + 1;
        marks.mark(parens[pTop]);
      }
      i++;
    } else if (c === STAR || c === UNDERSCORE || c === TILDE) {
      if (!emphasis) {
        clearOpeners();
        emphasis = true;
      }
      i = delimiterRun(line, i, c, action, size);
    } else i++;
  }
  if (pairCount === 0 || !line.includes('](')) return;
  links.count = 0;
  for (let k = 0; k < pairCount; k += 2) {
    const open = pairs[k];
    const close = pairs[k + 1];
    const end = parenEnd[close + 1] - 2; // the `)`
    if (end < 0) continue;
    let target = line.slice(close + 2, end).trim();
    if (target.startsWith('<') && target.endsWith('>')) target = target.slice(1, -1);
    const label = close - open - 1 === target.length ? line.slice(open + 1, close) : undefined;
    action[open] = LINK_OPEN;
    action[close] = LINK_CLOSE;
    marks.mark(open);
    marks.mark(close);
    size[close] = links.count;
    links.suffix[links.count] = target === '' || label === target ? '' : ` (${target})`;
    links.end[links.count++] = end + 1;
  }
}

/**
 * The line with the marked markup removed or rewritten. The pieces are linked, not copied, and
 * the last one that is not empty tells how the text ends without copying it to look.
 */
function emit(line: string, hasCode: boolean, hardBreak: boolean, budget?: Budget): string {
  const n = line.length;
  const { codeEnd, action, size } = marks;
  let out = '';
  let last = '';
  let from = 0;
  for (let i = nextMarkup(line, 0); i < n; i = nextMarkup(line, i)) {
    budget?.check();
    const c = line.charCodeAt(i);
    let text: string | undefined;
    let next = i;
    if (c === BACKTICK && hasCode && codeEnd[i] !== 0) {
      next = codeEnd[i] - 1;
      text = codeText(line, i, next);
    } else if (c === BACKSLASH && i + 1 < n && line.charCodeAt(i + 1) < 128 && PUNCT[line.charCodeAt(i + 1)] === 1) {
      text = line[i + 1];
      next = i + 2;
    } else if (action[i] === DROP_RUN) {
      text = '';
      next = i + size[i];
    } else if (c === BANG && action[i + 1] === LINK_OPEN) {
      text = '';
      next = i + 2;
    } else if (action[i] === LINK_OPEN) {
      text = '';
      next = i + 1;
    } else if (action[i] === LINK_CLOSE) {
      text = links.suffix[size[i]];
      next = links.end[size[i]];
    } else if (c === LESS) {
      const tag = angle(line, i);
      if (tag) {
        text = tag.text;
        next = tag.end;
      }
    }
    if (text === undefined) {
      i++;
      continue;
    }
    const before = line.slice(from, i);
    out += before + text;
    if (text !== '') last = text;
    else if (before !== '') last = before;
    i = next;
    from = next;
  }
  if (from === 0) return hardBreak && line.endsWith('\\') ? line.slice(0, -1) : line;
  const tail = line.slice(from);
  if (tail !== '') last = tail;
  const text = out + tail;
  return hardBreak && last.endsWith('\\') ? text.slice(0, -1) : text;
}

/** The text of the code span from `start` to `end`: backticks off, and one space each side when both are there. */
function codeText(line: string, start: number, end: number): string {
  let n = 0;
  while (line.charCodeAt(start + n) === BACKTICK) n++;
  const text = line.slice(start + n, end - n);
  return text.length > 2 && text.startsWith(' ') && text.endsWith(' ') && text.trim() !== '' ? text.slice(1, -1) : text;
}

const isAsciiLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** `<https://…>` → the URL; `<b>`, `</em>`, `<br/>` → nothing (`<br>` → a space); anything else is not markup. */
function angle(line: string, i: number): { text: string; end: number } | undefined {
  let j = i + 1;
  const closing = line.charCodeAt(j) === 0x2f; /* / */
  if (closing) j++;
  const nameStart = j;
  while (j - nameStart < 12 && isAsciiLetter(line.charCodeAt(j))) j++;
  const name = line.slice(nameStart, j).toLowerCase();
  if (!closing && (name === 'http' || name === 'https' || name === 'mailto') && line[j] === ':') {
    let k = j;
    while (k < line.length && line[k] !== '>' && line[k] !== '<' && line[k] !== ' ') k++;
    return line.charCodeAt(k) === GREATER ? { text: line.slice(i + 1, k), end: k + 1 } : undefined;
  }
  if (!FORMATTING_TAGS.has(name)) return undefined;
  if (line[j] === ' ' && line[j + 1] === '/') j++;
  if (line[j] === '/' && !closing) j++;
  if (line.charCodeAt(j) !== GREATER) return undefined;
  return { text: name === 'br' ? ' ' : '', end: j + 1 };
}
