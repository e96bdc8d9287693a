/**
 * `tabular` (verbosity=compact): JSON text holding arrays of uniform records, written with
 * fewer tokens. TOON (`@toon-format/toon`) states the keys once per array and lists the rows
 * below them; CSV and TSV do the same for a document that is one such array. The encoding is
 * used only when it is shorter than the minified JSON. `structuredContent` stays JSON, so a
 * client that wants the data as data still has it; the text beside it decodes to the same data.
 * Tool result text blocks and JSON resources (then labelled `text/toon`, `text/csv` or
 * `text/tab-separated-values`).
 */
import { encodeLines } from '@toon-format/toon';
import { z } from 'zod';
import type { Budget } from '../budget.js';
import type { Transformer } from '../contract.js';
import { isPlainObject, readJsonDocument, type Json } from '../_shared/json.js';
import { mapTexts } from '../_shared/map-texts.js';

const options = z
  .object({
    encoding: z
      .enum(['toon', 'csv', 'tsv'])
      .default('toon')
      .describe('toon: any document with a table in it; csv/tsv: only a document that is one table.'),
    /** Arrays shorter than this are left as JSON: for a row or two, the keys cost little. */
    minRows: z.number().int().min(2).default(3),
    /** Longer JSON texts are left as they are: TOON's encoder costs ~50 JSON round trips. */
    maxChars: z
      .number()
      .int()
      .positive()
      .default(256 * 1024),
  })
  .strict()
  .default({ encoding: 'toon', minRows: 3, maxChars: 256 * 1024 });

type Options = z.infer<typeof options>;

const MIME: Record<Options['encoding'], string> = { toon: 'text/toon', csv: 'text/csv', tsv: 'text/tab-separated-values' };

export const tabular: Transformer<Options> = {
  name: 'tabular',
  description:
    'Compact encoding of JSON text with arrays of uniform records (TOON, ' +
    'or CSV/TSV for one table), used when shorter than minified JSON; structuredContent stays JSON.',
  options,
  create(o) {
    const encodeText = (budget?: Budget) => (text: string) => encodeTables(text, o, budget) ?? text;
    return function tabularFn(result, ctx) {
      if (ctx.method !== 'tools/call' && ctx.method !== 'resources/read') return undefined;
      return mapTexts(result, ctx.method, encodeText(ctx.budget), {
        mimeTypes: ['application/json'],
        rename: { from: 'application/json', to: MIME[o.encoding] },
      });
    };
  },
};

/** The text in the configured encoding, or undefined when it is no JSON document with a table, or the encoding is not shorter. */
function encodeTables(text: string, o: Options, budget?: Budget): string | undefined {
  if (text.length > o.maxChars) return undefined;
  const doc = readJsonDocument(text);
  if (doc === undefined) return undefined;
  const { data } = doc;
  budget?.check(text.length);
  let encoded: string | undefined;
  if (o.encoding === 'toon') encoded = hasTable(data, o.minRows, budget) ? toon(data, budget) : undefined;
  else encoded = isTable(data, o.minRows) ? delimited(data as Array<Record<string, Json>>, o.encoding, budget) : undefined;
  if (encoded === undefined) return undefined;
  return encoded.length < (doc.minified ? text.length : JSON.stringify(data).length) ? encoded : undefined;
}

/** An array of at least `minRows` objects with the same keys and only primitive values. */
function isTable(value: Json, minRows: number): boolean {
  if (!Array.isArray(value) || value.length < minRows || !isPlainObject(value[0])) return false;
  const keys = Object.keys(value[0]);
  if (keys.length === 0) return false;
  return value.every((row) => {
    if (!isPlainObject(row)) return false;
    const rowKeys = Object.keys(row);
    return rowKeys.length === keys.length && rowKeys.every((k, i) => k === keys[i] && (row[k] === null || typeof row[k] !== 'object'));
  });
}

/** Whether a table is anywhere in `value` (walked without recursion). */
function hasTable(value: Json, minRows: number, budget?: Budget): boolean {
  const stack: Json[] = [value];
  while (stack.length > 0) {
    const v = stack.pop()!;
    budget?.check();
    if (Array.isArray(v)) {
      if (isTable(v, minRows)) return true;
      for (const item of v) stack.push(item);
    } else if (isPlainObject(v)) for (const key in v) stack.push(v[key]);
  }
  return false;
}

/** TOON, line by line, so that the time budget is checked as it is written. */
function toon(data: Json, budget?: Budget): string {
  const lines: string[] = [];
  for (const line of encodeLines(data)) {
    budget?.check(line.length + 1);
    lines.push(line);
  }
  return lines.join('\n');
}

/** RFC 4180 CSV (fields quoted when they must be), or TSV with tabs, newlines and backslashes escaped. */
function delimited(rows: Array<Record<string, Json>>, encoding: 'csv' | 'tsv', budget?: Budget): string {
  const keys = Object.keys(rows[0]);
  const field = encoding === 'csv' ? csvField : tsvField;
  const lines = [keys.map(field).join(encoding === 'csv' ? ',' : '\t')];
  for (const row of rows) {
    budget?.check(keys.length);
    lines.push(keys.map((k) => field(row[k] === null ? '' : String(row[k]))).join(encoding === 'csv' ? ',' : '\t'));
  }
  return lines.join('\n');
}

function csvField(text: string): string {
  return CSV_QUOTE.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function tsvField(text: string): string {
  return text.replace(TSV_ESCAPE, (c) => TSV_ESCAPES[c]);
}

const CSV_QUOTE = /[",\n\r]/;
const TSV_ESCAPE = /[\\\t\n\r]/g;
const TSV_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
