/**
 * Compact `*\/list` results: descriptions shortened at a sentence boundary (never erased),
 * parameter descriptions in input schemas and prompt arguments shortened the same way. Names,
 * types, enums, required lists and every other schema keyword are left exactly as they were.
 */
import type { McpResult } from '../contract.js';
import { isPlainObject, MAX_DEPTH, valueDepth } from '../_shared/json.js';

export interface ListLimits {
  descriptionLength: number;
  parameterDescriptionLength: number;
}

const LIST_KEYS = ['tools', 'prompts', 'resources', 'resourceTemplates'];

export function compactList(result: McpResult, limits: ListLimits): McpResult | undefined {
  const key = LIST_KEYS.find((k) => Array.isArray(result[k]));
  if (!key) return undefined;
  let changed = false;
  const items = (result[key] as unknown[]).map((item) => {
    if (!isPlainObject(item)) return item;
    const next: Record<string, unknown> = { ...item };
    if (typeof item.description === 'string') next.description = shorten(item.description, limits.descriptionLength);
    if (isPlainObject(item.inputSchema) && valueDepth(item.inputSchema) <= MAX_DEPTH) {
      next.inputSchema = shortenSchema(item.inputSchema, limits.parameterDescriptionLength);
    }
    if (Array.isArray(item.arguments)) {
      next.arguments = item.arguments.map((a) =>
        isPlainObject(a) && typeof a.description === 'string'
          ? { ...a, description: shorten(a.description, limits.parameterDescriptionLength) }
          : a,
      );
    }
    if (JSON.stringify(next) !== JSON.stringify(item)) changed = true;
    return next;
  });
  return changed ? { ...result, [key]: items } : undefined;
}

/**
 * Whitespace collapsed; when still longer than `limit`, cut after the last sentence that ends
 * within it (or at a word boundary when that would keep less than a third) and marked with `…`.
 */
export function shorten(text: string, limit: number): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t.length <= limit) return t;
  let cut = -1;
  for (let i = limit - 1; i > 0; i--) {
    const c = t[i - 1];
    if ((c === '.' || c === '!' || c === '?') && t[i] === ' ') {
      cut = i;
      break;
    }
  }
  if (cut < limit / 3) cut = t.lastIndexOf(' ', limit - 1);
  if (cut <= 0) cut = limit - 1;
  return `${t.slice(0, cut).trimEnd()} …`;
}

/** A JSON Schema with every `description` shortened (the structure untouched). */
function shortenSchema(schema: unknown, limit: number): unknown {
  if (Array.isArray(schema)) return schema.map((s) => shortenSchema(s, limit));
  if (!isPlainObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'description' && typeof v === 'string') out[k] = shorten(v, limit);
    else if (k === 'properties' && isPlainObject(v))
      out[k] = Object.fromEntries(Object.entries(v).map(([name, prop]) => [name, shortenSchema(prop, limit)]));
    else
      out[k] =
        typeof v === 'object' && v !== null && k !== 'enum' && k !== 'const' && k !== 'default' && k !== 'examples'
          ? shortenSchema(v, limit)
          : v;
  }
  return out;
}
