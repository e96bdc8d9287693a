/**
 * JSON found in upstream text. Documents nested deeper than MAX_DEPTH are not treated as data:
 * JSON.parse accepts them, but rendering or serialising them again would exhaust the stack.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const MAX_DEPTH = 64;

/** The whole text (surrounding whitespace aside) is a JSON object or array. */
export function parseJsonDocument(text: string): Json | undefined {
  const t = text.trim();
  const first = t.charCodeAt(0);
  if (first !== 0x7b /* { */ && first !== 0x5b /* [ */) return undefined;
  if (nestingDepth(t) > MAX_DEPTH) return undefined;
  try {
    return JSON.parse(t) as Json;
  } catch {
    return undefined;
  }
}

/** The deepest bracket nesting in JSON text, outside strings (one linear scan). */
export function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/** The nesting depth of a parsed value, capped at `limit + 1` (no recursion). */
export function valueDepth(value: unknown, limit = MAX_DEPTH): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const item of Array.isArray(v) ? v : Object.values(v)) stack.push([item, depth + 1]);
  }
  return max;
}

export function isPlainObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
