/**
 * `json-extract`: structured data out of text. For tools/call, the text blocks become
 * `structuredContent` (an object; arrays are wrapped as `{ items }`), checked against the tool's
 * outputSchema when it has one, with a JSON text copy for clients that read only `content`.
 * When the data holds less than the text did (prose around a table, a sentence with a number),
 * the original text blocks stay beside it: the client gains structure and loses nothing.
 * For resources/read, text contents that are JSON as a whole are labelled application/json.
 * Results that already carry structuredContent, errors and binary contents are not touched; a
 * wrapped text (`{"result": <the text>}`, see _shared/wrapped-text.ts) is read like any other text, and in
 * tools/list the wrapper's schema is shown with `result` allowed to be that data.
 */
import { z } from 'zod';
import type { McpResult, Transformer } from '../contract.js';
import { extractData } from '../_shared/data-in-text.js';
import { toolText, withStructured } from '../_shared/structured-result.js';
import { isPlainObject, parseJsonDocument, writeJson } from '../_shared/json.js';
import { satisfiesSchema } from '../_shared/schema-check.js';
import { isWrapperSchema, widenedSchema } from '../_shared/wrapped-text.js';

const options = z
  .object({
    /** Keep one text block with the serialized JSON, for clients that read only `content`. */
    keepText: z.boolean().default(true),
  })
  .strict()
  .default({ keepText: true });

export const jsonExtract: Transformer<z.infer<typeof options>> = {
  name: 'json-extract',
  description:
    'Parse JSON, fenced blocks, markdown tables and key: value lines (numbers typed, units in keys) out of text ' +
    'into structuredContent (tools) or application/json (resources); prose the data does not cover is kept.',
  options,
  create({ keepText }) {
    return function jsonExtractFn(result, ctx) {
      if (ctx.method === 'resources/read') return resourceToJson(result);
      if (ctx.method === 'tools/list') return withWidenedSchemas(result);
      const from = ctx.method === 'tools/call' ? toolText(result) : undefined;
      if (!from) return undefined;
      const found = extractData(from.text, ctx.budget);
      if (found === undefined || found.data === null || typeof found.data !== 'object') return undefined;
      const structured = Array.isArray(found.data) ? { items: found.data } : found.data;
      if (!satisfiesSchema(structured, ctx.outputSchema ?? undefined)) {
        ctx.log.debug({ tool: ctx.name }, 'extracted data does not match the tool outputSchema; result left as it was');
        return undefined;
      }
      return withStructured(
        result,
        from,
        structured,
        keepText,
        ctx.budget,
        found.whole,
        structured === found.data ? found.json : undefined,
      );
    };
  },
};

/** tools/list with every wrapper schema widened: a wrapped text's data may take its place under `result`. */
function withWidenedSchemas(result: McpResult): McpResult | undefined {
  if (!Array.isArray(result.tools)) return undefined;
  let changed = false;
  const tools = result.tools.map((t: Record<string, unknown>) => {
    if (!isWrapperSchema(t?.outputSchema)) return t;
    changed = true;
    return { ...t, outputSchema: widenedSchema(t.outputSchema) };
  });
  return changed ? { ...result, tools } : undefined;
}

function resourceToJson(result: McpResult): McpResult | undefined {
  if (!Array.isArray(result.contents)) return undefined;
  let changed = false;
  const contents = result.contents.map((c: Record<string, unknown>) => {
    if (typeof c?.text !== 'string' || c.mimeType === 'application/json') return c;
    // Only a text that is JSON as a whole: a resource is a document, and picking data out of
    // its prose would lose the rest of it.
    const data = parseJsonDocument(c.text);
    if (data === undefined || (!isPlainObject(data) && !Array.isArray(data))) return c;
    changed = true;
    return { ...c, mimeType: 'application/json', text: writeJson(data) };
  });
  return changed ? { ...result, contents } : undefined;
}
