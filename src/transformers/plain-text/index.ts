/**
 * `plain-text`: markdown to clean text, one line at a time (linear in the input, whatever it
 * holds): headings lose their #s, lists keep their bullets, tables become `a | b` rows, fenced
 * and indented code stays verbatim, links keep their targets. A line keeps its leading
 * whitespace (in preformatted output such as `git status` it is meaning), the text its final
 * line break, and a unified diff is left whole. Applies to tool result text blocks, markdown
 * resources and resources without a mimeType (→ text/plain) and prompt message text.
 */
import type { Budget } from '../budget.js';
import { withoutOptions } from '../contract.js';
import { isUnifiedDiff } from '../_shared/unified-diff.js';
import {
  closesFence,
  indentOf,
  isBlank,
  isSetextUnderline,
  isTableDelimiter,
  isTableRow,
  isThematicBreak,
  parseFence,
  parseHeading,
  splitRow,
} from '../_shared/markdown-lines.js';
import { mapTexts } from '../_shared/map-texts.js';
import { inlineToText } from './inline.js';

export const plainText = withoutOptions(
  'plain-text',
  'Strip markdown from text (tool results, markdown resources, prompt messages), keeping lists and tables readable.',
  function plainTextFn(result, ctx) {
    return mapTexts(result, ctx.method, (text) => toPlainText(text, ctx.budget), {
      mimeTypes: ['text/markdown', ''],
      rename: { from: 'text/markdown', to: 'text/plain' },
    });
  },
);

/** Widest column padded for alignment; wider tables are joined without padding. */
const MAX_ALIGNED_WIDTH = 40;

export function toPlainText(markdown: string, budget?: Budget): string {
  if (isUnifiedDiff(markdown, budget)) return markdown;
  const lines = markdown.split('\n');
  const out: string[] = [];
  let fence: { char: string; length: number } | undefined;
  let inList = false;
  let previous: 'blank' | 'paragraph' | 'code' | 'other' = 'blank';
  for (let i = 0; i < lines.length; i++) {
    budget?.check(lines[i].length + 1);
    const line = lines[i].endsWith('\r') ? lines[i].slice(0, -1) : lines[i];
    if (fence) {
      if (closesFence(line, fence)) fence = undefined;
      else out.push(line);
      continue;
    }
    if (isBlank(line)) {
      out.push('');
      if (previous !== 'code') previous = 'blank';
      continue;
    }
    const indent = indentOf(line);
    if (indent >= 4 && !inList && (previous === 'blank' || previous === 'code')) {
      out.push(line); // indented code
      previous = 'code';
      continue;
    }
    const body = unquote(line);
    const open = parseFence(body);
    if (open) {
      fence = open;
      previous = 'other';
      continue;
    }
    if (previous === 'paragraph' && isSetextUnderline(body)) {
      previous = 'other';
      continue;
    }
    if (isThematicBreak(body)) {
      out.push('');
      previous = 'other';
      continue;
    }
    const heading = parseHeading(body);
    if (heading) {
      out.push(inlineToText(heading.text, budget));
      inList = false;
      previous = 'other';
      continue;
    }
    if (isTableRow(body) && isTableDelimiter(unquote(lines[i + 1] ?? ''))) {
      let end = i + 2;
      while (end < lines.length && isTableRow(lines[end])) end++;
      out.push(...table(body, lines.slice(i + 2, end).map(unquote), budget));
      i = end - 1;
      previous = 'other';
      continue;
    }
    const item = listItem(body, budget);
    if (item) {
      inList = true;
      out.push(item);
    } else {
      if (indent === 0) inList = false;
      out.push(inlineToText(body.trimEnd(), budget, true));
    }
    previous = 'paragraph';
  }
  const text = withoutBlankEnds(squeezeBlankLines(out));
  return text !== '' && markdown.endsWith('\n') ? `${text}\n` : text;
}

/** The lines joined, without the blank lines at either end (the first line keeps its indentation). */
function withoutBlankEnds(lines: string[]): string {
  let from = 0;
  let to = lines.length;
  while (from < to && isBlank(lines[from])) from++;
  while (to > from && isBlank(lines[to - 1])) to--;
  return lines.slice(from, to).join('\n').trimEnd();
}

/** The line without its blockquote markers (`> > text` → `text`). */
function unquote(line: string): string {
  let t = line;
  for (;;) {
    const s = t.trimStart();
    if (s[0] !== '>' || t.length - s.length > 3) return t;
    t = s[1] === ' ' ? s.slice(2) : s.slice(1);
  }
}

/** `- item`, `* item`, `+ item`, `3. item`, `3) item`: the item with `-` or its number kept, inline markup removed. */
function listItem(line: string, budget?: Budget): string | undefined {
  const indent = line.length - line.trimStart().length;
  const t = line.slice(indent);
  let marker: string | undefined;
  if ((t[0] === '-' || t[0] === '*' || t[0] === '+') && (t[1] === ' ' || t[1] === '\t')) marker = '-';
  else {
    let n = 0;
    while (n < 9 && t.charCodeAt(n) >= 0x30 && t.charCodeAt(n) <= 0x39) n++;
    if (n > 0 && (t[n] === '.' || t[n] === ')') && (t[n + 1] === ' ' || t[n + 1] === '\t')) marker = `${t.slice(0, n)}.`;
  }
  if (marker === undefined) return undefined;
  const rest = t.slice(marker === '-' ? 2 : marker.length + 1).trim();
  return `${' '.repeat(indent)}${marker} ${inlineToText(rest, budget, true)}`;
}

/** A table's header and body rows (the delimiter row left out) as `a | b` lines, aligned when narrow. */
function table(header: string, rows: string[], budget?: Budget): string[] {
  const cells = [header, ...rows].map((r) => {
    budget?.check(r.length + 1);
    return splitRow(r).map((c) => inlineToText(c.trim(), budget));
  });
  const widths: number[] = [];
  for (const row of cells) row.forEach((c, j) => (widths[j] = Math.max(widths[j] ?? 0, c.length)));
  const aligned = widths.every((w) => w <= MAX_ALIGNED_WIDTH);
  return cells.map((row) =>
    row
      .map((c, j) => (aligned ? c.padEnd(widths[j]) : c))
      .join(' | ')
      .trimEnd(),
  );
}

function squeezeBlankLines(lines: string[]): string[] {
  return lines.filter((l, k) => l !== '' || lines[k - 1] !== '');
}
