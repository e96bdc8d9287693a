/**
 * Compact prose, one line at a time: named markdown sections and paragraphs dropped (`## Tips`
 * up to the next heading of its level; a paragraph that opens with `Tip:` or `**Example:**` up to
 * the next blank line), trailing whitespace and runs of blank lines removed, an optional length
 * cap. The section a document opens with (its title) is never dropped, and neither is
 * everything: if only headings would remain, the sections stay. A unified diff is left whole:
 * its trailing spaces and blank lines are part of it.
 */
import type { Budget } from '../budget.js';
import { isUnifiedDiff } from '../_shared/unified-diff.js';
import { keyValueOf } from '../_shared/data-in-text.js';
import { closesFence, indentOf, isBlank, parseFence, parseHeading } from '../_shared/markdown-lines.js';

export interface ProseOptions {
  /** Lower-case section names to drop. */
  drop: Set<string>;
  maxLength?: number;
  budget?: Budget;
}

export function compactProse(text: string, o: ProseOptions): string {
  if (isUnifiedDiff(text, o.budget)) return text;
  const lines = text.split('\n');
  const kept = dropNamedSections(lines, o.drop, o.budget);
  const body = kept.some((l) => !isBlank(l) && !parseHeading(l)) ? kept : lines;
  return cap(withoutBlankRuns(body).join('\n').trim(), o.maxLength);
}

/**
 * The lines without the sections whose heading is in `names` (up to the next heading of the
 * same or a higher level), and without the paragraphs that open with such a name and a colon
 * (`Tip: …`, up to the next blank line or heading, or a line of its own `Key: value` at the left
 * margin, which is the next fact rather than more of the tip). Headings inside fenced code are
 * not headings.
 */
export function dropNamedSections(lines: string[], names: Set<string>, budget?: Budget): string[] {
  if (names.size === 0) return lines;
  const out: string[] = [];
  const first = lines.findIndex((l) => !isBlank(l));
  let skipLevel = 0;
  let skipParagraph = false;
  let fence: { char: string; length: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    budget?.check(line.length + 1);
    if (fence) {
      if (closesFence(line, fence)) fence = undefined;
    } else {
      fence = parseFence(line);
      const h = fence ? undefined : parseHeading(line);
      if (h && (!skipLevel || h.level <= skipLevel)) {
        skipLevel = i !== first && names.has(sectionName(h.text)) ? h.level : 0;
        skipParagraph = false;
      } else if (!skipLevel && !fence && !h) {
        if (isBlank(line) || (skipParagraph && startsFact(line))) skipParagraph = false;
        else if (!skipParagraph && i !== first && (i === 0 || isBlank(lines[i - 1])) && names.has(paragraphName(line)))
          skipParagraph = true;
      }
    }
    if (!skipLevel && !skipParagraph) out.push(line);
  }
  return out;
}

/** "**Tip:** pass --dry-run" → "tip"; '' when the line does not open with a short label and a colon. */
function paragraphName(line: string): string {
  const colon = line.indexOf(':');
  if (colon < 1 || colon > 24 || indentOf(line) > 3) return '';
  return sectionName(line.slice(0, colon));
}

/** A `Key: value` line at the left margin that is no list item: a fact of its own, not a tip's next line. */
function startsFact(line: string): boolean {
  const c = line[0];
  return c !== ' ' && c !== '\t' && !((c === '-' || c === '*' || c === '+') && line[1] === ' ') && keyValueOf(line) !== undefined;
}

/** "**Examples:**" → "examples". */
function sectionName(heading: string): string {
  let name = '';
  for (const ch of heading) if (ch !== '*' && ch !== '_' && ch !== ':') name += ch;
  return name.trim().toLowerCase();
}

function withoutBlankRuns(lines: string[]): string[] {
  const out: string[] = [];
  for (const line of lines) {
    const t = line.trimEnd();
    if (t !== '' || (out.length > 0 && out[out.length - 1] !== '')) out.push(t);
  }
  return out;
}

function cap(text: string, max: number | undefined): string {
  if (max === undefined || text.length <= max) return text;
  return `${text.slice(0, max).trimEnd()}… [truncated ${text.length - max} characters]`;
}
