/**
 * Compact catalogs (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`):
 * what a model needs to choose an item and call it, and nothing that changes which calls are
 * valid.
 *
 * - Descriptions: the opening paragraph (up to a blank line or a label line such as
 *   `Error Responses:`), sentences that several items of the list repeat left out, then the first
 *   `sentences` sentences, capped at `descriptionLength`. Never erased.
 * - Parameter descriptions (in input and output schemas, prompt arguments): the first sentence,
 *   capped at `parameterDescriptionLength`.
 * - Schemas: keywords that constrain nothing dropped (`title`, `examples`, `$comment`,
 *   `additionalProperties: true`, a `default` longer than DEFAULT_LENGTH characters as JSON, a
 *   `$schema` the schema reads the same without), and `$defs`/`definitions` entries that no
 *   `$ref` reaches.
 * - Tools: annotation hints and `execution.taskSupport` at the protocol's defaults dropped. Every property name, `type`, `enum`,
 *   `const`, `required`, constraint, `$ref`, `additionalProperties: false` and composition
 *   (`anyOf`, `oneOf`, `allOf`, `not`, `if`) is kept, so every call valid before is valid after.
 *
 * Linear in the size of the list; schemas deeper than MAX_DEPTH are left as they are.
 */
import type { McpResult } from '../contract.js';
import { isPlainObject, MAX_DEPTH, valueDepth } from '../_shared/json.js';

export interface ListLimits {
  descriptionLength: number;
  parameterDescriptionLength: number;
  /** Sentences of an item's description kept. */
  sentences: number;
}

const LIST_KEYS = ['tools', 'prompts', 'resources', 'resourceTemplates'];

/** Schema keywords that annotate and never constrain: dropped. */
const ANNOTATIONS = new Set(['title', 'examples', '$comment']);
/** Keywords that move where a `$ref` points: with any of them, every definition is kept. */
const BASE_KEYWORDS = new Set(['$id', '$anchor', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$recursiveAnchor']);
/** Dialects a schema means the same in as in 2020-12 (the default without `$schema`), unless it uses the keywords of dialectNeutral. */
const DIALECTS = /^https?:\/\/json-schema\.org\/(draft-07\/schema|draft\/2019-09\/schema|draft\/2020-12\/schema)#?$/;
/** A `default` longer than this (as JSON) is prose for the model, not a value it needs. */
const DEFAULT_LENGTH = 40;
/** Keywords whose value is one schema. */
const SCHEMA_KEYWORDS = new Set([
  'items',
  'additionalItems',
  'additionalProperties',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
  'contentSchema',
]);
/** Keywords whose value is an array of schemas. */
const SCHEMA_ARRAY_KEYWORDS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems', 'items']);
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP_KEYWORDS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs', 'definitions']);
/** A sentence that this many items of one list share is boilerplate of the list. */
const REPEATED = 3;

export function compactList(result: McpResult, limits: ListLimits): McpResult | undefined {
  const key = LIST_KEYS.find((k) => Array.isArray(result[k]));
  if (!key) return undefined;
  const list = result[key] as unknown[];
  const openings = list.map((item) =>
    isPlainObject(item) && typeof item.description === 'string' ? sentencesOf(openingParagraph(item.description)) : undefined,
  );
  const repeated = repeatedSentences(openings);
  let changed = false;
  const items = list.map((item, i) => {
    if (!isPlainObject(item)) return item;
    const next: Record<string, unknown> = { ...item };
    const opening = openings[i];
    if (opening !== undefined) next.description = compactDescription(opening, limits, repeated);
    if (key === 'tools') withoutDefaults(next);
    for (const schemaKey of ['inputSchema', 'outputSchema'])
      if (isPlainObject(item[schemaKey]) && valueDepth(item[schemaKey]) <= MAX_DEPTH)
        next[schemaKey] = compactSchema(item[schemaKey], limits.parameterDescriptionLength);
    if (Array.isArray(item.arguments)) {
      next.arguments = item.arguments.map((a) =>
        isPlainObject(a) && typeof a.description === 'string'
          ? { ...a, description: firstSentences(a.description, 1, limits.parameterDescriptionLength) }
          : a,
      );
    }
    if (!changed && JSON.stringify(next) !== JSON.stringify(item)) changed = true;
    return next;
  });
  return changed ? { ...result, [key]: items } : undefined;
}

/** Tool annotation hints the protocol gives when absent (2025-11-25 `ToolAnnotations`). */
const HINT_DEFAULTS: Record<string, boolean> = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

/**
 * A tool without what the protocol assumes when it is absent: annotation hints at their
 * defaults, an `annotations.title` the tool's own `title` overrides, `execution.taskSupport`
 * "forbidden"; an object left empty goes too.
 */
function withoutDefaults(tool: Record<string, unknown>): void {
  if (isPlainObject(tool.annotations)) {
    const annotations = Object.fromEntries(
      Object.entries(tool.annotations).filter(
        ([k, v]) => HINT_DEFAULTS[k] !== v && !(k === 'title' && typeof tool.title === 'string' && tool.title !== ''),
      ),
    );
    if (Object.keys(annotations).length > 0) tool.annotations = annotations;
    else delete tool.annotations;
  }
  if (isPlainObject(tool.execution)) {
    const execution = Object.fromEntries(Object.entries(tool.execution).filter(([k, v]) => !(k === 'taskSupport' && v === 'forbidden')));
    if (Object.keys(execution).length > 0) tool.execution = execution;
    else delete tool.execution;
  }
}

/** The opening paragraph's sentences without the list's boilerplate ones, cut to `sentences` sentences. */
function compactDescription(opening: string[], limits: ListLimits, repeated: Set<string>): string {
  const own = opening.filter((s) => !repeated.has(s));
  return cut((own.length > 0 ? own : opening).slice(0, limits.sentences).join(' '), limits.descriptionLength);
}

/**
 * The text up to its first blank line or label line (a line that is only a few words and a
 * colon: `Error Responses:`, `Examples:`, `Args:`), or a heading after the first line; the whole
 * text when that would leave nothing.
 */
export function openingParagraph(text: string): string {
  const lines = text.split('\n');
  let end = lines.length;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '' || /^#{1,6} /.test(line) || (line.length <= 40 && /^[A-Za-z][A-Za-z ]*:$/.test(line))) {
      end = i;
      break;
    }
  }
  const opening = collapse(end === lines.length ? text : lines.slice(0, end).join(' '));
  return opening === '' ? collapse(text) : opening;
}

/** Runs of whitespace as one space, none at either end (split and join: many times faster than a global replace on long texts). */
function collapse(text: string): string {
  return text.split(/\s+/).join(' ').trim();
}

/** Sentences of a collapsed text, cut after `.`, `!` or `?` and a space, never after `e.g.` or a capital's initial. */
export function sentencesOf(t: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < t.length - 1; i++) {
    const c = t[i];
    if ((c !== '.' && c !== '!' && c !== '?') || t[i + 1] !== ' ') continue;
    if (c === '.' && abbreviation(t, i)) continue;
    out.push(t.slice(start, i + 1));
    start = i + 2;
  }
  if (start < t.length) out.push(t.slice(start));
  return out;
}

/** Whether the `.` at `dot` ends an abbreviation (`e.g.`, `i.e.`, `etc.`, `vs.`, an initial) rather than a sentence. */
function abbreviation(t: string, dot: number): boolean {
  let w = dot;
  while (w > 0 && t[w - 1] !== ' ' && t[w - 1] !== '(') w--;
  const word = t.slice(w, dot);
  if (/^[A-Z]$/.test(word)) return true;
  return ['e.g', 'i.e', 'etc', 'vs', 'approx'].includes(word.toLowerCase());
}

/** The first `n` sentences of a text, capped at `limit` characters (see shorten). */
export function firstSentences(text: string, n: number, limit: number): string {
  return cut(sentencesOf(collapse(text)).slice(0, n).join(' '), limit);
}

/**
 * Whitespace collapsed; when still longer than `limit`, cut after the last sentence that ends
 * within it (or at a word boundary when that would keep less than a third) and marked with `…`.
 */
export function shorten(text: string, limit: number): string {
  return cut(collapse(text), limit);
}

/** shorten on a collapsed text. */
function cut(t: string, limit: number): string {
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

/** Sentences of the items' opening paragraphs that REPEATED or more items share. */
function repeatedSentences(openings: Array<string[] | undefined>): Set<string> {
  const counts = new Map<string, number>();
  for (const sentences of openings) for (const s of new Set(sentences)) counts.set(s, (counts.get(s) ?? 0) + 1);
  return new Set([...counts].filter(([, n]) => n >= REPEATED).map(([s]) => s));
}

/**
 * A JSON Schema without its annotations, its descriptions shortened, and its unreached
 * definitions dropped. Only keywords known to hold schemas are walked into: `enum`, `const`,
 * `default`, `required` and unknown keywords are values, kept as they are.
 */
export function compactSchema(schema: Record<string, unknown>, limit: number): Record<string, unknown> {
  // Beside unevaluatedProperties, `additionalProperties: true` marks properties evaluated: it then constrains calls.
  const out = walk(schema, limit, !hasKeyword(schema, OPEN_MATTERS)) as Record<string, unknown>;
  if (typeof out.$schema === 'string' && DIALECTS.test(out.$schema) && dialectNeutral(out)) delete out.$schema;
  for (const defs of ['$defs', 'definitions']) {
    if (!isPlainObject(out[defs])) continue;
    const reached = reachedDefinitions(out, defs);
    if (!reached) continue;
    const kept = Object.fromEntries(Object.entries(out[defs]).filter(([name]) => reached.has(name)));
    if (Object.keys(kept).length > 0) out[defs] = kept;
    else delete out[defs];
  }
  return out;
}

/** `dropOpen`: whether `additionalProperties: true` says nothing (no unevaluatedProperties reads it). */
function walk(schema: unknown, limit: number, dropOpen: boolean): unknown {
  if (!isPlainObject(schema)) return schema;
  // Entries, then fromEntries: an upstream's `__proto__` key stays a key of the copy.
  const out: Array<[string, unknown]> = [];
  for (const [k, v] of Object.entries(schema)) {
    if (ANNOTATIONS.has(k)) continue;
    if (k === 'additionalProperties' && v === true && dropOpen) continue;
    if (k === 'default' && JSON.stringify(v).length > DEFAULT_LENGTH) continue;
    if (k === 'description' && typeof v === 'string') out.push([k, firstSentences(v, 1, limit)]);
    else if (SCHEMA_MAP_KEYWORDS.has(k) && isPlainObject(v))
      out.push([k, Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, walk(sub, limit, dropOpen)]))]);
    else if (SCHEMA_ARRAY_KEYWORDS.has(k) && Array.isArray(v)) out.push([k, v.map((sub) => walk(sub, limit, dropOpen))]);
    else if (SCHEMA_KEYWORDS.has(k) && isPlainObject(v)) out.push([k, walk(v, limit, dropOpen)]);
    else out.push([k, v]);
  }
  return Object.fromEntries(out);
}

/**
 * Names in `schema[defs]` that a `$ref` reaches from outside it, directly or through other
 * definitions; undefined when some `$ref` is not a plain `#/<defs>/<name>` (then all are kept).
 */
function reachedDefinitions(schema: Record<string, unknown>, defs: string): Set<string> | undefined {
  const table = schema[defs] as Record<string, unknown>;
  const prefix = `#/${defs}/`;
  const reached = new Set<string>();
  const pending: unknown[] = [Object.fromEntries(Object.entries(schema).filter(([k]) => k !== defs))];
  let plain = true;
  const visit = (value: unknown) => {
    if (Array.isArray(value)) pending.push(...value);
    else if (isPlainObject(value))
      for (const [k, v] of Object.entries(value)) {
        if (k === '$ref' && typeof v === 'string') {
          const name = v.startsWith(prefix) ? v.slice(prefix.length) : undefined;
          if (name === undefined || name.includes('/') || name.includes('~') || name.includes('%') || !(name in table)) plain = false;
          else if (!reached.has(name)) {
            reached.add(name);
            pending.push(table[name]);
          }
        } else if (BASE_KEYWORDS.has(k)) plain = false;
        else if (typeof v === 'object' && v !== null) pending.push(v);
      }
  };
  while (pending.length > 0 && plain) visit(pending.pop());
  return plain ? reached : undefined;
}

/**
 * Whether a schema reads the same under draft-07, 2019-09 and 2020-12, so its `$schema` can go:
 * none of the keywords whose meaning changed (`items` as an array, `additionalItems`,
 * `dependencies`, `$recursiveRef`, a `$ref` with other keywords beside it, which draft-07
 * ignores and 2020-12 applies).
 */
function dialectNeutral(schema: Record<string, unknown>): boolean {
  if (hasKeyword(schema, NEWER_KEYWORDS)) return false;
  const pending: unknown[] = [schema];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) pending.push(...value);
    else if (isPlainObject(value)) {
      if (Array.isArray(value.items) || 'additionalItems' in value || 'dependencies' in value || '$recursiveRef' in value) return false;
      if (typeof value.$ref === 'string' && Object.keys(value).some((k) => k !== '$ref' && k !== 'description')) return false;
      for (const v of Object.values(value)) if (typeof v === 'object' && v !== null) pending.push(v);
    }
  }
  return true;
}

/** Keywords beside which `additionalProperties: true` constrains a call. */
const OPEN_MATTERS = new Set(['unevaluatedProperties']);
/** Keywords draft-07 ignores and 2019-09 and later apply: a draft-07 schema with them must keep its `$schema`. */
const NEWER_KEYWORDS = new Set([
  'dependentRequired',
  'dependentSchemas',
  'unevaluatedProperties',
  'unevaluatedItems',
  'prefixItems',
  'minContains',
  'maxContains',
]);

/** Whether any object in `schema` has one of `keys` as a member. */
function hasKeyword(schema: unknown, keys: Set<string>): boolean {
  const pending: unknown[] = [schema];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) pending.push(...value);
    else if (isPlainObject(value))
      for (const [k, v] of Object.entries(value)) {
        if (keys.has(k)) return true;
        if (typeof v === 'object' && v !== null) pending.push(v);
      }
  }
  return false;
}
