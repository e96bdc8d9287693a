/**
 * Finds structured data in text an upstream wrote for people: a JSON document, a fenced JSON
 * block or a JSON object in prose (when there is only one: of two, which is the data is not for
 * the proxy to guess), markdown tables (→ arrays of objects) and `key: value` lines (→ object
 * entries; runs of lines that repeat the same keys → an array of records). Numbers are typed, a
 * unit after a number moves into the key (`Temperature: 8°C` → `temperature_c: 8`, `72%` →
 * `_percent: 72`), and a quoted value loses its quote marks. The first heading, when the text
 * starts with it, becomes `title`. Every value is a fact of the text, and a shape the proxy
 * cannot make regular (keys repeated out of step) is no data at all. A unified diff holds no
 * data. Everything runs in one pass over the lines.
 */
import type { Budget } from '../budget.js';
import { isUnifiedDiff } from './unified-diff.js';
import { isPlainObject, MAX_DEPTH, parseJsonDocument, type Json } from './json.js';
import { closesFence, isBlank, isTableDelimiter, isTableRow, parseFence, parseHeading, splitRow } from './markdown-lines.js';

export type { Json } from './json.js';

export interface Extracted {
  data: Json;
  /** The text was this data and nothing else (a JSON document): nothing of it is left behind. */
  whole: boolean;
  /** JSON.stringify(data), when it was written as the data was read (prose). */
  json?: string;
}

export function extractData(text: string, budget?: Budget): Extracted | undefined {
  const doc = parseJsonDocument(text);
  if (doc !== undefined) return { data: doc, whole: true };
  if (isUnifiedDiff(text, budget)) return undefined;
  const found = fencedJson(text, budget) ?? embeddedObject(text);
  if (found !== undefined) return { data: found, whole: false };
  const prose = proseData(text, budget);
  return prose === undefined ? undefined : { ...prose, whole: false };
}

/** The one fenced block (any info string) whose body is a JSON document; undefined when there is none, or more than one. */
function fencedJson(text: string, budget?: Budget): Json | undefined {
  if (!text.includes('```') && !text.includes('~~~')) return undefined;
  const lines = text.split('\n');
  let found: Json | undefined;
  for (let i = 0; i < lines.length; i++) {
    budget?.check(lines[i].length + 1);
    const open = parseFence(lines[i]);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !closesFence(lines[end], open)) end++;
    const value = parseJsonDocument(lines.slice(i + 1, end).join('\n'));
    if (value !== undefined) {
      if (found !== undefined) return undefined;
      found = value;
    }
    i = end;
  }
  return found;
}

/** Candidate `{`s looked at, at most, to find the one JSON object in prose. */
const MAX_CANDIDATES = 8;

/**
 * The one balanced `{…}` in the text that parses as a JSON object; undefined when there is none
 * or more than one (a diff's removed and added lines, a request and its response), or when more
 * than MAX_CANDIDATES braces would have to be looked at to tell.
 */
function embeddedObject(text: string): Json | undefined {
  let found: Json | undefined;
  let tries = 0;
  for (let start = text.indexOf('{'); start !== -1; start = text.indexOf('{', start + 1)) {
    if (++tries > MAX_CANDIDATES) return undefined;
    const end = matchingBrace(text, start);
    if (end === -1) break;
    const value = parseJsonDocument(text.slice(start, end + 1));
    if (!isPlainObject(value)) continue;
    if (found !== undefined) return undefined;
    found = value;
    start = end;
  }
  return found;
}

/** Index of the `}` closing the `{` at `start`, skipping strings; -1 if none or nested too deep. */
function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' && ++depth > MAX_DEPTH) return -1;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/** A value read from prose: its key, and what names the part of the text it is in. */
interface Entry {
  key: string;
  value: Json;
  /** The heading or `Label:` line above it, or '' (names the array its record is in). */
  context: string;
}

/**
 * Tables and `key: value` lines: a table is keyed by the heading or `Label:` line above it.
 * Needs at least two facts to count as data.
 */
function proseData(text: string, budget?: Budget): { data: Json; json?: string } | undefined {
  const entries: Entry[] = [];
  let facts = 0;
  let context = '';
  const lines = text.split('\n');
  const first = lines.findIndex((l) => !isBlank(l));
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    budget?.check(line.length + 1);
    const h = parseHeading(line);
    if (h) {
      context = h.text;
      if (i === first) entries.push({ key: 'title', value: h.text, context: '' });
      continue;
    }
    if (isTableRow(line) && isTableDelimiter(lines[i + 1] ?? '')) {
      let end = i + 2;
      while (end < lines.length && isTableRow(lines[end])) end++;
      entries.push({ key: keyOf(context) || 'table', value: tableRows(lines[i], lines.slice(i + 2, end), budget), context });
      facts += 2;
      i = end - 1;
      continue;
    }
    const kv = keyValueOf(line);
    if (kv) {
      const [key, value] = typedEntry(keyOf(kv[0]) || 'value', kv[1]);
      entries.push({ key, value, context });
      facts++;
      continue;
    }
    const label = labelLineOf(line);
    if (label !== undefined) context = label;
  }
  return facts >= 2 ? shaped(entries, budget) : undefined;
}

/**
 * The entries as one object: each key once, or, where keys repeat, the run of entries that
 * repeats them as an array of records (`Commit: …`, `Author: …`, blank, `Commit: …`, …). The
 * records must all have the keys of the first, in its order; anything less regular is no data.
 */
function shaped(entries: Entry[], budget?: Budget): { data: Json; json?: string } | undefined {
  const firstAt = new Map<string, number>();
  let repeat = -1;
  for (let i = 0; i < entries.length && repeat === -1; i++) {
    if (firstAt.has(entries[i].key)) repeat = i;
    else firstAt.set(entries[i].key, i);
  }
  if (repeat === -1) return written(entries);
  const start = firstAt.get(entries[repeat].key)!;
  const width = repeat - start;
  const records: Json[] = [];
  let i = start;
  for (; i + width <= entries.length && entries[i].key === entries[start].key; i += width) {
    budget?.check(width);
    const record: Record<string, Json> = {};
    for (let j = 0; j < width; j++) {
      const e = entries[i + j];
      if (e.key !== entries[start + j].key) return undefined;
      record[e.key] = e.value;
    }
    records.push(record);
  }
  const context = entries[start].context;
  let sameContext = true;
  for (let r = start; r < i; r += width) if (entries[r].context !== context) sameContext = false;
  const name = (sameContext && keyOf(context)) || 'items';
  const out: Entry[] = [...entries.slice(0, start), { key: name, value: records, context }];
  const taken = new Set(out.map((e) => e.key));
  if (taken.size < out.length) return undefined; // the array's name is taken
  for (let r = i; r < entries.length; r++) {
    const { key } = entries[r];
    if (taken.has(key) || firstAt.get(key)! >= start) return undefined; // a record's key after the records: out of step
    taken.add(key);
    out.push(entries[r]);
  }
  return written(out);
}

/**
 * The entries (each key once) as an object, with its JSON text written as it is built:
 * serialising an object of thousands of keys afterwards costs several times more. The keys are
 * made of a-z, 0-9 and _ (keyOf), so they need no escaping; a key that starts with a digit may
 * be an array index, which JSON.stringify writes first: then the text is left to it.
 */
function written(entries: Entry[]): { data: Json; json?: string } {
  const out: Record<string, Json> = {};
  let json: string | undefined = '';
  for (const { key, value } of entries) {
    out[key] = value;
    if (json === undefined) continue;
    if (isDigit(key.charCodeAt(0))) json = undefined;
    else {
      const encoded = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : 'null') : JSON.stringify(value);
      json += `${json === '' ? '' : ','}"${key}":${encoded}`;
    }
  }
  return { data: out, json: json === undefined ? undefined : `{${json}}` };
}

/** Rows of a markdown table as objects; a column whose cells share a unit is typed (`high_c: 9`). */
function tableRows(header: string, rows: string[], budget?: Budget): Json[] {
  const keys = splitRow(header).map((c, j) => keyOf(plainCell(c)) || `column_${j + 1}`);
  const cells = rows.map((r) => {
    budget?.check(r.length + 1);
    return splitRow(r).map(plainCell);
  });
  const width = cells.reduce((w, r) => Math.max(w, r.length), keys.length);
  const out = cells.map((): Record<string, Json> => ({}));
  for (let j = 0; j < width; j++) {
    const column = cells.map((r) => r[j]);
    const units = column.map((c) => (c ? numberWithUnit(c) : undefined));
    const unit = units.find((u) => u !== undefined)?.unit;
    const shared = unit !== undefined && column.every((c, k) => !c || units[k]?.unit === unit);
    const key = shared ? withUnit(keys[j] ?? `column_${j + 1}`, unit) : (keys[j] ?? `column_${j + 1}`);
    column.forEach((c, k) => {
      if (c !== undefined) out[k][key] = shared && c !== '' ? units[k]!.value : typed(c);
    });
  }
  return out;
}

/** A table cell without emphasis markers or code backticks. */
function plainCell(cell: string): string {
  let t = cell;
  for (const marker of MARKERS) if (t.includes(marker)) t = t.split(marker).join('');
  return t.trim();
}

const MARKERS = ['**', '__', '`'];

/**
 * `Label: value`, optionally as a list item, with emphasis markers removed: a label of at most
 * 41 characters that starts with a letter, then a colon and whitespace, then a value.
 */
export function keyValueOf(line: string): [string, string] | undefined {
  if (!line.includes(':')) return undefined;
  const t = (line.includes('**') || line.includes('__') ? line.split('**').join('').split('__').join('') : line).trimStart();
  let start = 0;
  if ((t[0] === '-' || t[0] === '*' || t[0] === '+') && (t[1] === ' ' || t[1] === '\t')) start = 2;
  while (t[start] === ' ' || t[start] === '\t') start++;
  const colon = t.indexOf(':', start);
  if (colon === -1 || colon - start > 48) return undefined;
  const label = t.slice(start, colon).trimEnd();
  if (label.length === 0 || label.length > 41 || !isLabel(label)) return undefined;
  const after = t[colon + 1];
  if (after !== ' ' && after !== '\t') return undefined;
  const value = t.slice(colon + 1).trim();
  return value === '' ? undefined : [label, value];
}

/** `Commit history:` alone on its line (emphasis markers aside): its label, which names what follows. */
function labelLineOf(line: string): string | undefined {
  if (!line.includes(':')) return undefined;
  const t = (line.includes('**') || line.includes('__') ? line.split('**').join('').split('__').join('') : line).trim();
  if (t.length < 2 || t.charCodeAt(t.length - 1) !== 0x3a /* : */) return undefined;
  const label = t.slice(0, -1).trimEnd();
  return label.length <= 41 && isLabel(label) ? label : undefined;
}

/** `[A-Za-z][\w ()%/.-]*`, by character code. */
function isLabel(label: string): boolean {
  if (!isAsciiLetter(label.charCodeAt(0))) return false;
  for (let i = 1; i < label.length; i++) {
    const c = label.charCodeAt(i);
    if (c >= 128 || LABEL_CHAR[c] === 0) return false;
  }
  return true;
}

const LABEL_CHAR = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_ ()%/.-') LABEL_CHAR[c.charCodeAt(0)] = 1;

/** "Wind speed (km/h)" → "wind_speed_km_h": runs of other characters become one `_` (a linear, native replace). */
export function keyOf(label: string): string {
  const key = label.toLowerCase().replace(NOT_KEY, '_');
  const from = key.charCodeAt(0) === 0x5f ? 1 : 0;
  const to = key.length > from && key.charCodeAt(key.length - 1) === 0x5f ? key.length - 1 : key.length;
  return from === 0 && to === key.length ? key : key.slice(from, to);
}

const NOT_KEY = /[^a-z0-9]+/g;

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** Numbers and booleans become typed; everything else stays the string it was. */
export function typed(value: string): Json {
  const v = value.trim();
  if (JSON_NUMBER.test(v)) return Number(v);
  if (v === 'true' || v === 'false') return v === 'true';
  return v;
}

/** A key and its typed value: a number with a unit puts the unit in the key (`temperature` + `8°C` → `temperature_c`, 8). */
export function typedEntry(key: string, raw: string): [string, Json] {
  const v = raw.trim();
  const text = unquoted(v);
  if (text !== undefined) return [key, text];
  if (numberEnd(v) === v.length) return [key, Number(v)]; // a plain number: no unit to look for
  const m = numberWithUnit(v);
  return m ? [withUnit(key, m.unit), m.value] : [key, typed(v)];
}

/**
 * `'abc'` or `"abc"` (a quoted string, as Python's repr writes one): the text between the quote
 * marks, when it holds neither that mark nor a backslash (then the quotes are all there is to
 * take away). A quoted value is a string, whatever it spells.
 */
function unquoted(v: string): string | undefined {
  const q = v[0];
  if ((q !== "'" && q !== '"') || v.length < 2 || v[v.length - 1] !== q) return undefined;
  const inner = v.slice(1, -1);
  return inner.includes(q) || inner.includes('\\') ? undefined : inner;
}

/**
 * "8°C" → { value: 8, unit: "°C" }; "12 km/h", "72%", "3.5 kg" likewise. The unit is a symbol
 * (%, ‰, °, °C) or one to five letters, optionally per one to three letters (km/h, m/s).
 */
export function numberWithUnit(raw: string): { value: number; unit: string } | undefined {
  const v = raw.trim();
  const i = numberEnd(v);
  if (i === -1) return undefined;
  const unit = v.slice(v[i] === ' ' ? i + 1 : i);
  return isUnit(unit) ? { value: Number(v.slice(0, i)), unit } : undefined;
}

/**
 * The end of the number `v` starts with: `-?(0|[1-9]\d*)(\.\d+)?`, as JSON writes it, without an
 * exponent (`1e3 m` is no number with a unit). -1 when there is none: 007 stays a string, as it
 * does without a unit.
 */
function numberEnd(v: string): number {
  let i = v.charCodeAt(0) === 0x2d /* - */ ? 1 : 0;
  const digits = i;
  while (isDigit(v.charCodeAt(i))) i++;
  if (i === digits || (i - digits > 1 && v.charCodeAt(digits) === 0x30)) return -1;
  if (v.charCodeAt(i) === 0x2e /* . */) {
    const frac = ++i;
    while (isDigit(v.charCodeAt(i))) i++;
    if (i === frac) return -1;
  }
  return i;
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

function isUnit(unit: string): boolean {
  if (unit === '%' || unit === '‰' || unit === '°') return true;
  if (unit[0] === '°') return unit.length === 2 && isAsciiLetter(unit.charCodeAt(1));
  const slash = unit.indexOf('/');
  const per = slash === -1 ? unit.length : slash;
  return (
    per >= 1 &&
    per <= 5 &&
    letters(unit, 0, per, true) &&
    (slash === -1 || (unit.length - slash - 1 >= 1 && unit.length - slash - 1 <= 3 && letters(unit, slash + 1, unit.length, false)))
  );
}

function letters(text: string, from: number, to: number, micro: boolean): boolean {
  for (let i = from; i < to; i++) if (!isAsciiLetter(text.charCodeAt(i)) && !(micro && text[i] === 'µ')) return false;
  return true;
}

const isAsciiLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** `temperature` + `°C` → `temperature_c`; `humidity` + `%` → `humidity_percent` (no suffix twice). */
export function withUnit(key: string, unit: string): string {
  const suffix = unit === '%' ? 'percent' : unit === '‰' ? 'permille' : unit === '°' ? 'deg' : keyOf(unit);
  return key.endsWith(`_${suffix}`) || key === suffix ? key : `${key}_${suffix}`;
}
