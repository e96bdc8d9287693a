/**
 * What a catalog entry promises a caller, independent of its prose: for tests that check a
 * compact catalog against the full one. A schema's contract is every keyword that decides which
 * arguments are valid (types, enums, consts, required lists, bounds, patterns, formats,
 * compositions, references, closed objects), by its path through property names and subschemas;
 * a definition counts where some `$ref` reaches it. An entry's contract is its name, title, the
 * contracts of its schemas and prompt arguments, and its annotation hints with the protocol's
 * defaults filled in.
 */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords that describe and do not constrain. */
const PROSE = new Set(['description', 'title', 'examples', '$comment', '$schema', 'default']);
const SCHEMA = new Set(['items', 'additionalItems', 'additionalProperties', 'unevaluatedItems', 'unevaluatedProperties', 'contains']);
const SCHEMA_ALSO = new Set(['propertyNames', 'not', 'if', 'then', 'else', 'contentSchema']);
const SCHEMA_ARRAY = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems', 'items']);
const SCHEMA_MAP = new Set(['properties', 'patternProperties', 'dependentSchemas']);
const DEFINITIONS = new Set(['$defs', 'definitions']);
const HINTS: Record<string, boolean> = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

/** The constraints of a schema, `path → value`; definitions are added as `#/$defs/name…` for those a `$ref` reaches. */
export function schemaContract(root: unknown): Map<string, string> {
  const into = new Map<string, string>();
  const refs: string[] = [];
  walk(root, '#', into, refs);
  const seen = new Set<string>();
  while (refs.length > 0) {
    const ref = refs.pop()!;
    const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
    if (!m || seen.has(ref) || !isObject(root)) continue;
    seen.add(ref);
    const table = root[m[1]];
    const def = isObject(table) ? table[m[2]] : undefined;
    if (def === undefined) into.set(`${ref}!`, 'unresolved');
    else walk(def, ref, into, refs);
  }
  return into;
}

function walk(schema: unknown, path: string, into: Map<string, string>, refs: string[]): void {
  if (!isObject(schema)) {
    into.set(path, JSON.stringify(schema));
    return;
  }
  for (const [k, v] of Object.entries(schema)) {
    const at = `${path}/${k}`;
    if (PROSE.has(k) || DEFINITIONS.has(k) || (k === 'additionalProperties' && v === true)) continue;
    if (k === '$ref' && typeof v === 'string') refs.push(v);
    if (SCHEMA_MAP.has(k) && isObject(v)) {
      into.set(at, JSON.stringify(Object.keys(v).sort()));
      for (const [name, sub] of Object.entries(v)) walk(sub, `${at}/${name}`, into, refs);
    } else if (SCHEMA_ARRAY.has(k) && Array.isArray(v)) {
      into.set(at, `${v.length} schemas`);
      v.forEach((sub, i) => walk(sub, `${at}/${i}`, into, refs));
    } else if ((SCHEMA.has(k) || SCHEMA_ALSO.has(k)) && isObject(v)) walk(v, at, into, refs);
    else into.set(at, JSON.stringify(v));
  }
}

/** The contract of one catalog entry (a tool, prompt, resource or resource template). */
export function entryContract(entry: Record<string, unknown>): Record<string, unknown> {
  const hints = isObject(entry.annotations) ? entry.annotations : {};
  const annotations = Object.fromEntries(
    Object.entries({ ...HINTS, ...hints }).filter(([k]) => k !== 'title' || typeof entry.title !== 'string'),
  );
  return {
    name: entry.name,
    title: entry.title,
    uri: entry.uri,
    uriTemplate: entry.uriTemplate,
    mimeType: entry.mimeType,
    inputSchema: entry.inputSchema === undefined ? undefined : Object.fromEntries(schemaContract(entry.inputSchema)),
    outputSchema: entry.outputSchema === undefined ? undefined : Object.fromEntries(schemaContract(entry.outputSchema)),
    arguments: Array.isArray(entry.arguments)
      ? entry.arguments.map((a: Record<string, unknown>) => ({ name: a.name, required: a.required }))
      : undefined,
    annotations: entry.inputSchema === undefined ? entry.annotations : annotations,
    taskSupport: isObject(entry.execution) ? (entry.execution.taskSupport ?? 'forbidden') : entry.inputSchema && 'forbidden',
    icons: entry.icons,
    _meta: entry._meta,
  };
}
