/**
 * Finds structured data in text an upstream wrote for people: a JSON document, a fenced code
 * block, the first JSON object in prose, markdown tables (→ arrays of objects) and `key: value`
 * lines (→ objects, numbers and booleans typed). Returns undefined when there is nothing.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function extractData(text: string): Json | undefined {
  return parseJsonDocument(text) ?? fencedJson(text) ?? embeddedObject(text) ?? proseData(text);
}

/** The whole text is a JSON object or array. */
export function parseJsonDocument(text: string): Json | undefined {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return undefined;
  try {
    return JSON.parse(t) as Json;
  } catch {
    return undefined;
  }
}

function fencedJson(text: string): Json | undefined {
  for (const m of text.matchAll(/```(?:json|JSON)?[^\n]*\n([\s\S]*?)```/g)) {
    const value = parseJsonDocument(m[1]);
    if (value !== undefined) return value;
  }
  return undefined;
}

/** The first balanced `{…}` in the text that parses as JSON (a few candidates at most: the scan is linear). */
function embeddedObject(text: string): Json | undefined {
  let tries = 0;
  for (let start = text.indexOf('{'); start !== -1 && tries++ < 8; start = text.indexOf('{', start + 1)) {
    const end = matchingBrace(text, start);
    if (end === -1) return undefined;
    try {
      const value = JSON.parse(text.slice(start, end + 1)) as Json;
      if (value && typeof value === 'object') return value;
    } catch {
      /* keep looking */
    }
  }
  return undefined;
}

function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/** `Label: value`, optionally as a list item (emphasis markers are stripped first). */
const KEY_VALUE = /^\s*(?:[-*+]\s+)?([A-Za-z][\w ()%/.-]{0,40}?)\s*:\s+(\S.*)$/;

/**
 * Tables and `key: value` lines, read line by line (a linear scan: results can be large);
 * a table is keyed by the heading above it. Needs at least two facts to count as data.
 */
function proseData(text: string): Json | undefined {
  const out: Record<string, Json> = {};
  let facts = 0;
  let heading = '';
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      heading = h[1];
      continue;
    }
    if (line.trimStart().startsWith('|') && TABLE_RULE.test(lines[i + 1] ?? '')) {
      const keys = cells(line).map((c, j) => keyOf(c) || `column_${j + 1}`);
      const rows: Json[] = [];
      for (i += 2; i < lines.length && lines[i].trimStart().startsWith('|'); i++) {
        rows.push(Object.fromEntries(cells(lines[i]).map((c, j) => [keys[j] ?? `column_${j + 1}`, typed(c)])));
      }
      i--;
      out[uniqueKey(out, keyOf(heading) || 'table')] = rows;
      facts += 2;
      continue;
    }
    facts += keyValue(line, out);
  }
  return facts >= 2 ? out : undefined;
}

const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;

/** The cells of a markdown table row, without emphasis markers. */
function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.replace(/\\\|/g, '|').replace(/\*\*|__|`/g, '').trim());
}

function keyValue(line: string, out: Record<string, Json>): number {
  const m = KEY_VALUE.exec(line.replace(/\*\*|__/g, ''));
  if (!m) return 0;
  out[uniqueKey(out, keyOf(m[1]))] = typed(m[2].trim());
  return 1;
}

/** "Wind speed (km/h)" → "wind_speed_km_h". */
export function keyOf(label: string): string {
  return label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

function uniqueKey(out: Record<string, unknown>, key: string): string {
  let k = key || 'value';
  for (let i = 2; k in out; i++) k = `${key}_${i}`;
  return k;
}

/** Numbers and booleans become typed; everything else stays the string it was. */
export function typed(value: string): Json {
  const v = value.trim();
  if (/^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(v)) return Number(v);
  if (v === 'true' || v === 'false') return v === 'true';
  return v;
}
