/**
 * `trim` (verbosity=compact): less to read, nothing of substance lost.
 * - Prose (tool text, markdown resources, prompt messages): sections and paragraphs such as
 *   Examples and Tips dropped (never the document's own title section, never down to nothing),
 *   trailing spaces and runs of blank lines removed, optionally capped with a marker. A unified
 *   diff is left whole.
 * - JSON text is minified; other data (code, CSV, YAML resources) is left as it is; a text
 *   beside `structuredContent` changes only losslessly, so the two keep agreeing.
 * - Lists (tools, prompts, resources): descriptions shortened at a sentence boundary, never
 *   erased; parameter descriptions shortened; names, types, enums and required never touched.
 */
import { z } from 'zod';
import type { Budget } from '../budget.js';
import type { McpResult, Transformer } from '../contract.js';
import { parseJsonDocument, writeJson } from '../_shared/json.js';
import { mapTexts } from '../_shared/map-texts.js';
import { compactList } from './lists.js';
import { compactProse } from './prose.js';

const SECTIONS = ['Examples', 'Example', 'Tips', 'Tip', 'See also'];

const options = z
  .object({
    /** Cap prose at this many characters (with a marker saying how much was cut); unset: no cap. */
    maxLength: z.number().int().positive().optional(),
    dropSections: z.array(z.string()).default(SECTIONS),
    /** Shorten descriptions in tools/list, prompts/list and resources/list. */
    lists: z.boolean().default(true),
    descriptionLength: z.number().int().min(40).default(300),
    parameterDescriptionLength: z.number().int().min(20).default(120),
    /** Sentences of a list item's description kept (parameter descriptions keep one). */
    sentences: z.number().int().min(1).default(2),
  })
  .strict()
  .default({ dropSections: SECTIONS, lists: true, descriptionLength: 300, parameterDescriptionLength: 120, sentences: 2 });

export const trim: Transformer<z.infer<typeof options>> = {
  name: 'trim',
  description:
    'Compact output: drop sections such as Examples and Tips, remove blank runs, ' +
    'minify JSON text; shorter descriptions in lists. Never drops data or empties a result.',
  options,
  create({ maxLength, dropSections, lists, descriptionLength, parameterDescriptionLength, sentences }) {
    const drop = new Set(dropSections.map((s) => s.toLowerCase()));
    const prose = (budget?: Budget) => (text: string) => minified(text) ?? compactProse(text, { drop, maxLength, budget });
    return function trimFn(result, ctx) {
      if (ctx.method.endsWith('/list'))
        return lists ? compactList(result, { descriptionLength, parameterDescriptionLength, sentences }) : undefined;
      if (ctx.method === 'resources/read') return compactResource(result, prose(ctx.budget));
      const lossless = ctx.method === 'tools/call' && result.structuredContent !== undefined;
      return mapTexts(result, ctx.method, lossless ? (t) => minified(t) ?? t : prose(ctx.budget), { mimeTypes: [] });
    };
  },
};

/** JSON text without its whitespace; undefined when the text is not a JSON document. */
function minified(text: string): string | undefined {
  const data = parseJsonDocument(text);
  return data === undefined ? undefined : writeJson(data);
}

/** Resources: JSON minified, markdown (or untyped) prose compacted, everything else as it was. */
function compactResource(result: McpResult, prose: (text: string) => string): McpResult | undefined {
  if (!Array.isArray(result.contents)) return undefined;
  let changed = false;
  const contents = result.contents.map((c: Record<string, unknown>) => {
    if (typeof c?.text !== 'string') return c;
    const mime = typeof c.mimeType === 'string' ? c.mimeType : '';
    const text = c.text;
    const next =
      mime === 'application/json' || mime.endsWith('+json')
        ? minified(text)
        : mime === 'text/markdown' || mime === ''
          ? prose(text)
          : undefined;
    if (next === undefined || next === text) return c;
    changed = true;
    return { ...c, text: next };
  });
  return changed ? { ...result, contents } : undefined;
}
