/**
 * Renders structured data as readable markdown without losing any of it: an array of flat
 * objects becomes a table, scalars a bold-key list, arrays of scalars a list, flat nested objects
 * and tables sub-sections, multi-line text its own paragraph. Anything deeper or irregular is
 * shown as a fenced `json` block, so every key and value stays visible.
 */
import type { Budget } from '../budget.js';
import { isPlainObject, MAX_DEPTH, valueDepth } from './json.js';

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
  return parts.filter((p) => p !== '').join('\n\n');
}

function body(value: unknown, level: number, budget?: Budget): string {
  if (Array.isArray(value)) {
    if (isTable(value)) return table(value as Array<Record<string, unknown>>, budget);
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
  return [scalars.join('\n'), ...sections].filter((p) => p !== '').join('\n\n');
}

function table(rows: Array<Record<string, unknown>>, budget?: Budget): string {
  const seen = new Set<string>();
  for (const row of rows) for (const key in row) seen.add(key);
  const keys = [...seen];
  let out = `| ${keys.map(labelOf).join(' | ')} |\n|${' --- |'.repeat(keys.length)}`;
  for (const row of rows) {
    budget?.check(keys.length);
    out += '\n|';
    for (const key of keys) out += ` ${cell(row[key])} |`;
  }
  return out;
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

function isTable(value: unknown[]): boolean {
  if (value.length === 0) return false;
  for (const row of value) {
    if (!isPlainObject(row)) return false;
    for (const key in row) if (isStructured(row[key]) || isMultiline(row[key])) return false;
  }
  return true;
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

function cell(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  let t = inline(v);
  if (t.includes('|')) t = t.split('|').join('\\|');
  if (t.includes('\n')) t = t.split('\r\n').join(' ').split('\n').join(' ');
  return t;
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
