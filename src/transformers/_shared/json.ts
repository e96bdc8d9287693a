/**
 * JSON found in upstream text. Documents nested deeper than MAX_DEPTH are not treated as data:
 * JSON.parse accepts them, but rendering or serialising them again would exhaust the stack.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const MAX_DEPTH = 64;

/**
 * The whole text (surrounding whitespace aside) is a JSON object or array. JSON.parse itself
 * is iterative, so even a megabyte of `[` parses; the depth is checked on the parsed value.
 */
export function parseJsonDocument(text: string): Json | undefined {
  return readJsonDocument(text)?.data;
}

/**
 * The JSON text a step wrote last (writeJson) and the data it wrote it from. A later step that
 * reads the same text takes the data instead of parsing it again: trim minifies a JSON text and
 * tabular then reads it; json-extract writes its text copy and tabular reads that. The data is
 * what parsing the text gives: a text with `null` in it is not remembered (a number too large
 * for a double is written as null), and a -0 reads as 0 but every reader writes it as 0. It is
 * taken once, so no two results get the same object.
 */
let written: { text: string; data: Json } | undefined;

/** JSON.stringify(data), or `text` when the caller has written it, remembered for the next step that reads it (see `written`). */
export function writeJson(data: Json, text = JSON.stringify(data)): string {
  written = text.includes('null') ? undefined : { text, data };
  return text;
}

/** As parseJsonDocument, and whether `text` is exactly JSON.stringify of the data (a step wrote it). */
export function readJsonDocument(text: string): { data: Json; minified: boolean } | undefined {
  if (written !== undefined && written.text === text) {
    const { data } = written;
    written = undefined;
    return valueDepth(data) > MAX_DEPTH ? undefined : { data, minified: true };
  }
  const t = text.trim();
  const first = t.charCodeAt(0);
  if (first !== 0x7b /* { */ && first !== 0x5b /* [ */) return undefined;
  let value: Json;
  try {
    value = JSON.parse(t) as Json;
  } catch {
    return undefined;
  }
  return valueDepth(value) > MAX_DEPTH ? undefined : { data: value, minified: false };
}

/** The nesting depth of a parsed value, capped at `limit + 1` (no recursion; only objects and arrays are visited). */
export function valueDepth(value: unknown, limit = MAX_DEPTH): number {
  if (value === null || typeof value !== 'object') return 0;
  const values: object[] = [value];
  const depths: number[] = [1];
  let max = 0;
  while (values.length > 0) {
    const v = values.pop()! as Record<string, unknown>;
    const depth = depths.pop()!;
    if (depth > max && (max = depth) > limit) return max;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item = v[i];
        if (item !== null && typeof item === 'object') {
          values.push(item);
          depths.push(depth + 1);
        }
      }
    } else {
      for (const key in v) {
        const item = v[key];
        if (item !== null && typeof item === 'object') {
          values.push(item);
          depths.push(depth + 1);
        }
      }
    }
  }
  return max;
}

export function isPlainObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
