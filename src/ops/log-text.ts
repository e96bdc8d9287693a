/**
 * Bounds on what goes into logs and traces. Much of it comes from clients and upstreams (method
 * names, tool names, addresses, error messages), so no field may grow with what they send: a
 * 2 MB method name must not make a 2 MB log line. `clip` cuts one string; `boundedFields` is the
 * logger's last word on every line (src/main.ts), so a field nobody thought to clip is cut too.
 */

/** Longest string a log line keeps in one field (or as its message). */
export const MAX_FIELD_CHARS = 2048;
/** Longest array a log line keeps in one field. */
const MAX_ITEMS = 64;
/** Nesting below this is not walked: a log field is not a document. */
const MAX_DEPTH = 4;

/** `text`, or its first `max` characters and how many more there were. */
export function clip(text: string, max = MAX_FIELD_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** A log line's fields with every string clipped and every array shortened; the same object when nothing was too long. */
export function boundedFields(fields: Record<string, unknown>): Record<string, unknown> {
  return bounded(fields, 0) as Record<string, unknown>;
}

function bounded(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return clip(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH) return `[array of ${value.length}]`;
    const kept = value.length > MAX_ITEMS ? [...value.slice(0, MAX_ITEMS), `… (${value.length - MAX_ITEMS} more items)`] : value;
    let changed = kept !== value;
    const items = kept.map((item) => {
      const b = bounded(item, depth + 1);
      if (b !== item) changed = true;
      return b;
    });
    return changed ? items : value;
  }
  // Errors and other instances are the serializers' business (pino's own for `err`).
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  if (depth >= MAX_DEPTH) return '[object]';
  let out: Record<string, unknown> | undefined;
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    const b = bounded(v, depth + 1);
    if (b !== v) (out ??= { ...(value as Record<string, unknown>) })[key] = b;
  }
  return out ?? value;
}
