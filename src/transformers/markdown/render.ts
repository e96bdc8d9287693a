/**
 * Renders structured data as readable markdown without losing any of it: an array of flat
 * objects becomes a table, scalars a bold-key list, arrays of scalars a list, flat nested objects
 * and tables sub-sections, multi-line text its own paragraph. Anything deeper or irregular is
 * shown as a fenced `json` block, so every key and value stays visible.
 */
import type { Budget } from '../budget.js';
import { isPlainObject, MAX_DEPTH, valueDepth } from '../_shared/json.js';

/**
 * Markdown for `value` (under a `## title` when given), or undefined when it is nested too deeply
 * to render safely. `depthChecked`: the value came from parseJsonDocument, which checked already.
 */
export function toMarkdown(value: unknown, title?: string, budget?: Budget, depthChecked = false): string | undefined {
  if (!depthChecked && valueDepth(value) > MAX_DEPTH) return undefined;
  return section(value, title, 2, budget);
}

function section(value: unknown, title: string | undefined, level: number, budget?: Budget): string {
  const parts: string[] = [];
  if (title) parts.push(`${'#'.repeat(Math.min(level, 6))} ${title}`);
  parts.push(body(value, level + 1, budget));
  return joinNonEmpty(parts, '\n\n');
}

/**
 * The parts that are not empty, joined: by concatenation, which links the parts rather than
 * copying them (a join would copy the rendering again at every level of sections).
 */
function joinNonEmpty(parts: string[], separator: string): string {
  let out = '';
  for (const part of parts) if (part !== '') out = out === '' ? part : out + separator + part;
  return out;
}

function body(value: unknown, level: number, budget?: Budget): string {
  if (Array.isArray(value)) {
    const columns = tableColumns(value);
    if (columns) return table(value as Array<Record<string, unknown>>, columns, budget);
    if (value.every((v) => !isStructured(v) && !isMultiline(v))) return value.map((v) => `- ${inline(v)}`).join('\n');
    return fencedJson(value);
  }
  if (!isPlainObject(value)) return isMultiline(value) ? String(value) : inline(value);
  const scalars: string[] = [];
  const sections: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    budget?.check();
    if (isStructured(v) || isMultiline(v)) sections.push(section(v, labelOf(key), level, budget));
    else scalars.push(`- **${labelOf(key)}**: ${inline(v)}`);
  }
  if (level > 4 && sections.length > 0) return fencedJson(value); // three levels of sections is enough to read
  return joinNonEmpty([scalars.join('\n'), ...sections], '\n\n');
}

function table(rows: Array<Record<string, unknown>>, columns: Columns, budget?: Budget): string {
  const { keys, uniform } = columns;
  const lines: string[] = [`| ${keys.map(labelOf).join(' | ')} |`, `|${' --- |'.repeat(keys.length)}`];
  for (const row of rows) {
    budget?.check(keys.length);
    let line = '|';
    // Rows with the same keys in the same order are read in their own order (for-in reads those fastest).
    if (uniform) for (const key in row) line += ' ' + cell(row[key]) + ' |';
    else for (let j = 0; j < keys.length; j++) line += ' ' + cell(row[keys[j]]) + ' |';
    lines.push(line);
  }
  return lines.join('\n');
}

/** A table's columns: every key in the order first seen; `uniform` when every row has exactly the first row's keys, in its order. */
interface Columns {
  keys: string[];
  uniform: boolean;
}

/**
 * The columns of an array that is a table (objects of scalars and one-line strings); undefined
 * when it is no table. A row with the first row's keys in its order adds none, and needs no set.
 */
function tableColumns(rows: unknown[]): Columns | undefined {
  if (rows.length === 0) return undefined;
  const first: string[] = [];
  let seen: Set<string> | undefined;
  let uniform = true;
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    if (!isPlainObject(row)) return undefined;
    let j = 0;
    let same = r > 0;
    for (const key in row) {
      if (isStructured(row[key]) || isMultiline(row[key])) return undefined;
      if (r === 0) first.push(key);
      else if (same && key === first[j]) j++;
      else {
        same = false;
        seen ??= new Set(first);
        seen.add(key);
      }
    }
    if (r > 0 && !(same && j === first.length)) uniform = false;
  }
  return { keys: seen ? [...seen] : first, uniform };
}

/** A JSON block fenced with more backticks than the longest run inside it. */
export function fencedJson(value: unknown): string {
  const json = JSON.stringify(value, null, 2);
  let longest = 0;
  let run = 0;
  for (let i = 0; i < json.length; i++) {
    run = json.charCodeAt(i) === 0x60 ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}json\n${json}\n${fence}`;
}

const isStructured = (v: unknown) => isPlainObject(v) || (Array.isArray(v) && v.length > 0);
const isMultiline = (v: unknown) => typeof v === 'string' && v.includes('\n');

function inline(v: unknown): string {
  if (v === undefined) return '—'; // a row without this column
  if (v === null) return 'null';
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return '`' + JSON.stringify(v) + '`';
  return String(v);
}

/** A table cell: one line already (tableColumns took no multi-line text), with its pipes escaped. */
function cell(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const t = inline(v);
  return t.includes('|') ? t.split('|').join('\\|') : t;
}

/** "wind_speed_kmh" → "Wind speed kmh"; "temperatureC" → "Temperature c" (one linear scan). */
export function labelOf(key: string): string {
  let out = '';
  let prevLower = false;
  for (const ch of key) {
    if (ch === '_' || ch === '-') {
      if (!out.endsWith(' ')) out += ' ';
      prevLower = false;
      continue;
    }
    const upper = ch !== ch.toLowerCase();
    if (upper && prevLower) out += ' ';
    out += ch.toLowerCase();
    prevLower = !upper && ch !== ch.toUpperCase();
  }
  const words = out.trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
