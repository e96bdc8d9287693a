/**
 * Inline markdown to plain text in time linear in the line: code spans lose their backticks,
 * emphasis and strike-through markers that pair up are removed, links and images become
 * `text (target)`, autolinks lose their brackets, backslash escapes are resolved and inline
 * formatting tags (`<b>`, `<br>`) dropped. Pairs are found with stacks and precomputed
 * matches, never by searching ahead from every candidate. Unpaired markers stay as they are.
 */
import type { Budget } from '../../pipeline/budget.js';
import { FORMATTING_TAGS } from '../_shared/facts.js';

const SPECIAL = /[`[\]*_~<\\]/;
const PUNCTUATION = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

/** `budget` is charged per character in every pass, so that even one huge line is cut short in time. */
export function inlineToText(line: string, budget?: Budget): string {
  if (!SPECIAL.test(line)) return line;
  const code = codeSpans(line, budget);
  const links = linkTargets(line, code, budget);
  const drop = pairedDelimiters(line, code, budget);
  const out: string[] = [];
  let from = 0;
  let i = 0;
  const emit = (text: string, next: number) => {
    out.push(line.slice(from, i), text);
    i = next;
    from = next;
  };
  while (i < line.length) {
    budget?.check();
    const spanEnd = code.get(i);
    if (spanEnd !== undefined) {
      emit(codeText(line, i, spanEnd), spanEnd);
      continue;
    }
    const c = line[i];
    if (c === '\\' && PUNCTUATION.has(line[i + 1] ?? '')) emit(line[i + 1], i + 2);
    else if (drop.has(i)) emit('', i + drop.get(i)!);
    else if (c === '!' && links.opens.has(i + 1)) emit('', i + 2);
    else if (c === '[' && links.opens.has(i)) emit('', i + 1);
    else if (c === ']' && links.closes.has(i)) {
      const link = links.closes.get(i)!;
      emit(link.suffix, link.end);
    } else if (c === '<') {
      const tag = angle(line, i);
      if (tag) emit(tag.text, tag.end);
      else i++;
    } else i++;
  }
  out.push(line.slice(from));
  return out.join('');
}

/**
 * Code spans, as opening index → index after the closing run: a run of n backticks up to the
 * next run of exactly n. Runs are kept in flat number arrays: a long line can hold a great many.
 */
function codeSpans(line: string, budget?: Budget): Map<number, number> {
  const spans = new Map<number, number>();
  if (!line.includes('`')) return spans;
  const starts: number[] = [];
  const lengths: number[] = [];
  for (let i = 0; i < line.length; i++) {
    budget?.check();
    if (line[i] !== '`' || line[i - 1] === '\\') continue;
    let n = 1;
    while (line[i + n] === '`') n++;
    starts.push(i);
    lengths.push(n);
    i += n - 1;
  }
  // next[k]: the index of the next run as long as run k (one right-to-left pass).
  const next = new Int32Array(starts.length);
  const lastOfLength = new Map<number, number>();
  for (let k = starts.length - 1; k >= 0; k--) {
    budget?.check();
    next[k] = lastOfLength.get(lengths[k]) ?? -1;
    lastOfLength.set(lengths[k], k);
  }
  for (let k = 0; k < starts.length; k++) {
    budget?.check();
    const close = next[k];
    if (close === -1) continue;
    spans.set(starts[k], starts[close] + lengths[close]);
    k = close;
  }
  return spans;
}

/** The text of the code span from `start` to `end`: backticks off, and one space each side when both are there. */
function codeText(line: string, start: number, end: number): string {
  let n = 0;
  while (line[start + n] === '`') n++;
  const text = line.slice(start + n, end - n);
  return text.length > 2 && text.startsWith(' ') && text.endsWith(' ') && text.trim() !== '' ? text.slice(1, -1) : text;
}

/**
 * Calls `visit(i)` for every index outside code spans and backslash escapes, left to right;
 * `visit` returns the index to go on from.
 */
function scanMarkup(line: string, code: Map<number, number>, budget: Budget | undefined, visit: (i: number) => number): void {
  for (let i = 0; i < line.length; ) {
    budget?.check();
    const spanEnd = code.get(i);
    if (spanEnd !== undefined) i = spanEnd;
    else if (line[i] === '\\') i += 2;
    else i = visit(i);
  }
}

interface Links {
  /** `[` of a link or image. */
  opens: Set<number>;
  /** `]` of a link or image → what to write instead of `](target)` and where to continue. */
  closes: Map<number, { suffix: string; end: number }>;
}

/** `[text](target)` pairs, from bracket and parenthesis matches made with stacks. */
function linkTargets(line: string, code: Map<number, number>, budget?: Budget): Links {
  const links: Links = { opens: new Set(), closes: new Map() };
  if (!line.includes('](')) return links;
  const bracketOf = new Map<number, number>(); // ] → [
  const parenOf = new Map<number, number>(); // ( → )
  const brackets: number[] = [];
  const parens: number[] = [];
  scanMarkup(line, code, budget, (i) => {
    const c = line[i];
    if (c === '[') brackets.push(i);
    else if (c === ']' && brackets.length) bracketOf.set(i, brackets.pop()!);
    else if (c === '(') parens.push(i);
    else if (c === ')' && parens.length) parenOf.set(parens.pop()!, i);
    return i + 1;
  });
  for (const [close, open] of bracketOf) {
    budget?.check();
    const end = parenOf.get(close + 1);
    if (end === undefined) continue;
    let target = line.slice(close + 2, end).trim();
    if (target.startsWith('<') && target.endsWith('>')) target = target.slice(1, -1);
    const label = close - open - 1 === target.length ? line.slice(open + 1, close) : undefined;
    links.opens.add(open);
    links.closes.set(close, { suffix: target === '' || label === target ? '' : ` (${target})`, end: end + 1 });
  }
  return links;
}

/**
 * Emphasis (`*`, `_`) and strike-through (`~`) runs that pair up: an opener followed by
 * non-space, a closer preceded by non-space, same character and length, never inside a word
 * (so `snake_case` and `2*3*4` keep their characters). Returns start → run length.
 */
function pairedDelimiters(line: string, code: Map<number, number>, budget?: Budget): Map<number, number> {
  const drop = new Map<number, number>();
  const openers = new Map<string, number[]>();
  scanMarkup(line, code, budget, (i) => {
    const c = line[i];
    if (c !== '*' && c !== '_' && c !== '~') return i + 1;
    let n = 1;
    while (line[i + n] === c) n++;
    const before = kind(line[i - 1]);
    const after = kind(line[i + n]);
    const left = after !== 'space' && (after !== 'punct' || before !== 'word');
    const right = before !== 'space' && (before !== 'punct' || after !== 'word');
    const canOpen = left && (!right || before === 'punct');
    const canClose = right && (!left || after === 'punct');
    const key = c + n;
    const stack = openers.get(key);
    if (canClose && stack?.length) {
      drop.set(stack.pop()!, n);
      drop.set(i, n);
    } else if (canOpen) {
      if (stack) stack.push(i);
      else openers.set(key, [i]);
    }
    return i + n;
  });
  return drop;
}

function kind(ch: string | undefined): 'space' | 'punct' | 'word' {
  if (ch === undefined || ch === ' ' || ch === '\t' || ch === '\n') return 'space';
  return PUNCTUATION.has(ch) ? 'punct' : 'word';
}

/** `<https://…>` → the URL; `<b>`, `</em>`, `<br/>` → nothing (`<br>` → a space); anything else is not markup. */
function angle(line: string, i: number): { text: string; end: number } | undefined {
  let j = i + 1;
  const closing = line[j] === '/';
  if (closing) j++;
  const nameStart = j;
  while (j - nameStart < 12 && /[A-Za-z]/.test(line[j] ?? '')) j++;
  const name = line.slice(nameStart, j).toLowerCase();
  if (!closing && (name === 'http' || name === 'https' || name === 'mailto') && line[j] === ':') {
    let k = j;
    while (k < line.length && line[k] !== '>' && line[k] !== '<' && line[k] !== ' ') k++;
    return line[k] === '>' ? { text: line.slice(i + 1, k), end: k + 1 } : undefined;
  }
  if (!FORMATTING_TAGS.has(name)) return undefined;
  if (line[j] === ' ' && line[j + 1] === '/') j++;
  if (line[j] === '/' && !closing) j++;
  if (line[j] !== '>') return undefined;
  return { text: name === 'br' ? ' ' : '', end: j + 1 };
}
