/**
 * `json-extract`: structured data out of text. For tools/call, the text blocks become
 * `structuredContent` (an object; arrays are wrapped as `{ items }`), checked against the tool's
 * outputSchema when it has one, with a JSON text copy for clients that read only `content`.
 * When the data holds less than the text did (prose around a table, a sentence with a number),
 * the original text blocks stay beside it: the client gains structure and loses nothing.
 * For resources/read, text contents that are JSON as a whole are labelled application/json.
 * Results that already carry structuredContent, errors and binary contents are not touched.
 */
import { z } from 'zod';
import { contentOf, isTextBlock, type McpResult, type Transformer } from '../../pipeline/types.js';
import { extractData } from '../_shared/extract.js';
import { factsOf, firstMissingFact } from '../_shared/facts.js';
import { isPlainObject, parseJsonDocument } from '../_shared/json.js';
import { satisfiesSchema } from '../_shared/schema-check.js';

const options = z
  .object({
    /** Keep one text block with the serialized JSON, for clients that read only `content`. */
    keepText: z.boolean().default(true),
  })
  .strict()
  .default({ keepText: true });

export const jsonExtract: Transformer<z.infer<typeof options>> = {
  name: 'json-extract',
  description: 'Parse JSON, fenced blocks, markdown tables and key: value lines (numbers typed, units in keys) out of text into structuredContent (tools) or application/json (resources); prose the data does not cover is kept.',
  options,
  create({ keepText }) {
    return function jsonExtractFn(result, ctx) {
      if (ctx.method === 'resources/read') return resourceToJson(result);
      if (ctx.method !== 'tools/call' || result.structuredContent !== undefined || result.isError === true) return undefined;
      const content = contentOf(result);
      const texts = content?.filter(isTextBlock) ?? [];
      if (!content || texts.length === 0) return undefined;
      const text = texts.map((b) => b.text).join('\n\n');
      const found = extractData(text, ctx.budget);
      if (found === undefined || found.data === null || typeof found.data !== 'object') return undefined;
      const structured = Array.isArray(found.data) ? { items: found.data } : found.data;
      if (!satisfiesSchema(structured, ctx.outputSchema)) {
        ctx.log.debug({ tool: ctx.name }, 'extracted data does not match the tool outputSchema; result left as it was');
        return undefined;
      }
      const partial = !found.whole && firstMissingFact(text, factsOf(structured, ctx.budget), ctx.budget) !== undefined;
      const copy = keepText ? [{ type: 'text', text: JSON.stringify(structured) }] : [];
      const others = content.filter((b) => !isTextBlock(b));
      return { ...result, content: [...copy, ...(partial ? texts : []), ...others], structuredContent: structured };
    };
  },
};

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
    return { ...c, mimeType: 'application/json', text: JSON.stringify(data) };
  });
  return changed ? { ...result, contents } : undefined;
}
