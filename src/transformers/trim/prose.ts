/**
 * Compact prose, one line at a time: named markdown sections dropped, trailing whitespace and
 * runs of blank lines removed, an optional length cap. The section a document opens with (its
 * title) is never dropped, and neither is everything: if only headings would remain, the
 * sections stay.
 */
import type { Budget } from '../budget.js';
import { closesFence, isBlank, parseFence, parseHeading } from '../_shared/markdown-lines.js';

export interface ProseOptions {
  /** Lower-case section names to drop. */
  drop: Set<string>;
  maxLength?: number;
  budget?: Budget;
}

export function compactProse(text: string, o: ProseOptions): string {
  const lines = text.split('\n');
  const kept = dropNamedSections(lines, o.drop, o.budget);
  const body = kept.some((l) => !isBlank(l) && !parseHeading(l)) ? kept : lines;
  return cap(withoutBlankRuns(body).join('\n').trim(), o.maxLength);
}

/**
 * The lines without the sections whose heading is in `names` (up to the next heading of the
 * same or a higher level). Headings inside fenced code are not headings.
 */
export function dropNamedSections(lines: string[], names: Set<string>, budget?: Budget): string[] {
  if (names.size === 0) return lines;
  const out: string[] = [];
  const first = lines.findIndex((l) => !isBlank(l));
  let skipLevel = 0;
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
      }
    }
    if (!skipLevel) out.push(line);
  }
  return out;
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
