/**
 * Renders structured data as readable markdown: scalars as a bold-key list, arrays of objects
 * as tables, arrays of scalars as lists, nested objects as sub-sections.
 */
import type { Json } from './extract.js';

export function toMarkdown(value: unknown, title?: string, level = 2): string {
  const parts: string[] = [];
  if (title) parts.push(`${'#'.repeat(Math.min(level, 6))} ${title}`);
  parts.push(body(value, level + 1));
  return parts.filter((p) => p !== '').join('\n\n');
}

function body(value: unknown, level: number): string {
  if (Array.isArray(value)) return isTable(value) ? table(value as Array<Record<string, unknown>>) : value.map((v) => `- ${inline(v)}`).join('\n');
  if (!isObject(value)) return inline(value);
  const scalars: string[] = [];
  const sections: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (isObject(v) || (Array.isArray(v) && v.length > 0)) sections.push(toMarkdown(v, labelOf(key), level));
    else scalars.push(`- **${labelOf(key)}**: ${inline(v)}`);
  }
  return [scalars.join('\n'), ...sections].filter((p) => p !== '').join('\n\n');
}

function table(rows: Array<Record<string, unknown>>): string {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(keys.map(labelOf)), line(keys.map(() => '---')), ...rows.map((r) => line(keys.map((k) => cell(r[k]))))].join('\n');
}

function isTable(value: unknown[]): boolean {
  return value.length > 0 && value.every(isObject) && value.every((r) => Object.values(r as object).every((v) => !isObject(v) && !Array.isArray(v)));
}

function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function inline(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return '`' + JSON.stringify(v) + '`';
  return String(v);
}

function cell(v: unknown): string {
  return inline(v).replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** "wind_speed_kmh" → "Wind speed kmh"; "temperatureC" → "Temperature c". */
export function labelOf(key: string): string {
  const words = key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ').trim().toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
