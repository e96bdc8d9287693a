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

/** `budget` is charged once per pass over the line, so that even one huge line is cut short in time. */
export function inlineToText(line: string, budget?: Budget): string {
  if (!SPECIAL.test(line)) return line;
  const code = codeSpans(line);
  budget?.check(line.length);
  const links = linkTargets(line, code);
  budget?.check(line.length);
  const drop = pairedDelimiters(line, code);
  budget?.check(line.length);
  const out: string[] = [];
  let from = 0;
  let i = 0;
  const emit = (text: string, next: number) => {
    out.push(line.slice(from, i), text);
    i = next;
    from = next;
  };
  while (i < line.length) {
    const span = code.get(i);
    if (span) {
      emit(span.text, span.end);
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

interface CodeSpan {
  text: string;
  end: number;
}

/** Code spans keyed by their opening index: a run of n backticks up to the next run of exactly n. */
function codeSpans(line: string): Map<number, CodeSpan> {
  const spans = new Map<number, CodeSpan>();
  if (!line.includes('`')) return spans;
  const runs: Array<{ start: number; length: number }> = [];
  for (let i = 0; i < line.length; i++) {
    if (line[i] !== '`' || line[i - 1] === '\\') continue;
    let n = 1;
    while (line[i + n] === '`') n++;
    runs.push({ start: i, length: n });
    i += n - 1;
  }
  // next[k]: the index of the next run as long as run k (one right-to-left pass).
  const next = new Array<number>(runs.length).fill(-1);
  const lastOfLength = new Map<number, number>();
  for (let k = runs.length - 1; k >= 0; k--) {
    next[k] = lastOfLength.get(runs[k].length) ?? -1;
    lastOfLength.set(runs[k].length, k);
  }
  for (let k = 0; k < runs.length; k++) {
    const close = next[k];
    if (close === -1) continue;
    const open = runs[k];
    let text = line.slice(open.start + open.length, runs[close].start);
    if (text.length > 2 && text.startsWith(' ') && text.endsWith(' ') && text.trim() !== '') text = text.slice(1, -1);
    spans.set(open.start, { text, end: runs[close].start + runs[close].length });
    k = close;
  }
  return spans;
}

/** Indexes inside code spans, as [start, end) ranges, for the other passes to skip. */
function skipper(code: Map<number, CodeSpan>): (i: number) => number {
  return (i) => code.get(i)?.end ?? i;
}

interface Links {
  /** `[` of a link or image. */
  opens: Set<number>;
  /** `]` of a link or image → what to write instead of `](target)` and where to continue. */
  closes: Map<number, { suffix: string; end: number }>;
}

/** `[text](target)` pairs, from bracket and parenthesis matches made with stacks. */
function linkTargets(line: string, code: Map<number, CodeSpan>): Links {
  const links: Links = { opens: new Set(), closes: new Map() };
  if (!line.includes('](')) return links;
  const skip = skipper(code);
  const bracketOf = new Map<number, number>(); // ] → [
  const parenOf = new Map<number, number>(); // ( → )
  const brackets: number[] = [];
  const parens: number[] = [];
  for (let i = 0; i < line.length; i++) {
    const j = skip(i);
    if (j !== i) {
      i = j - 1;
      continue;
    }
    const c = line[i];
    if (c === '\\') i++;
    else if (c === '[') brackets.push(i);
    else if (c === ']' && brackets.length) bracketOf.set(i, brackets.pop()!);
    else if (c === '(') parens.push(i);
    else if (c === ')' && parens.length) parenOf.set(parens.pop()!, i);
  }
  for (const [close, open] of bracketOf) {
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
function pairedDelimiters(line: string, code: Map<number, CodeSpan>): Map<number, number> {
  const drop = new Map<number, number>();
  const skip = skipper(code);
  const openers = new Map<string, number[]>();
  for (let i = 0; i < line.length; i++) {
    const j = skip(i);
    if (j !== i) {
      i = j - 1;
      continue;
    }
    const c = line[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c !== '*' && c !== '_' && c !== '~') continue;
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
    i += n - 1;
  }
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
