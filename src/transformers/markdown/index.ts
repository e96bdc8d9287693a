/**
 * `markdown`: structured data rendered for people. For tools/call, every text block that is a
 * JSON document becomes markdown (tables, lists, sections, or a fenced `json` block when the
 * data is deep); prose blocks stay as they are. A result with `structuredContent` and no text
 * gets a rendering of it. `structuredContent` is dropped only when the tool is known to declare
 * no outputSchema (it was listed) and a rendered block showed exactly that data. JSON resources become
 * text/markdown. An optional template fills `{{key}}` / `{{a.b}}` from the data.
 */
import { z } from 'zod';
import { contentOf, isTextBlock, type McpResult, type Transformer } from '../contract.js';
import { isPlainObject, parseJsonDocument, type Json } from '../_shared/json.js';
import { toMarkdown } from './render.js';

const options = z
  .object({
    /** Heading for the rendered data; `{{name}}` is the tool name or resource URI. */
    title: z.string().optional(),
    /** A markdown template with {{path}} placeholders, used instead of the generic rendering. */
    template: z.string().optional(),
  })
  .strict()
  .default({});

/** `parsed`: the data came from parseJsonDocument (its depth is checked). */
type Render = (data: Json, parsed?: boolean) => string | undefined;

export const markdown: Transformer<z.infer<typeof options>> = {
  name: 'markdown',
  description:
    'Render structured data (JSON text blocks, structuredContent, JSON resources) ' +
    'as markdown: tables, lists, sections or a fenced json block; prose is left alone.',
  options,
  create({ title, template }) {
    return function markdownFn(result, ctx) {
      const render: Render = (data, parsed) =>
        template ? fill(template, data, ctx.name) : toMarkdown(data, title?.split('{{name}}').join(ctx.name ?? ''), ctx.budget, parsed);
      if (ctx.method === 'resources/read') return resourceToMarkdown(result, render);
      if (ctx.method !== 'tools/call' || result.isError === true) return undefined;
      return toolResultToMarkdown(result, render, ctx.outputSchema !== null);
    };
  },
};

function toolResultToMarkdown(result: McpResult, render: Render, mayDeclare: boolean): McpResult | undefined {
  const content = contentOf(result) ?? [];
  const structured = result.structuredContent;
  if (!content.some(isTextBlock)) {
    const text = isPlainObject(structured) ? render(structured) : undefined;
    return text === undefined ? undefined : { ...result, content: [{ type: 'text', text }, ...content] };
  }
  let changed = false;
  let showedStructured = false;
  const rendered = content.map((block) => {
    if (!isTextBlock(block)) return block;
    const data = parseJsonDocument(block.text);
    const text = data === undefined ? undefined : render(data, true);
    if (text === undefined) return block;
    changed = true;
    if (structured !== undefined && JSON.stringify(data) === JSON.stringify(structured)) showedStructured = true;
    return { type: 'text', text, ...(block.annotations ? { annotations: block.annotations } : {}) };
  });
  if (!changed) return undefined;
  const out: McpResult = { ...result, content: rendered };
  if (showedStructured && !mayDeclare) delete out.structuredContent;
  return out;
}

function resourceToMarkdown(result: McpResult, render: Render): McpResult | undefined {
  if (!Array.isArray(result.contents)) return undefined;
  let changed = false;
  const contents = result.contents.map((c: Record<string, unknown>) => {
    if (typeof c?.text !== 'string') return c;
    const data = parseJsonDocument(c.text);
    const text = data === undefined ? undefined : render(data, true);
    if (text === undefined) return c;
    changed = true;
    return { ...c, mimeType: 'text/markdown', text };
  });
  return changed ? { ...result, contents } : undefined;
}

/** Fills `{{path}}` placeholders (a linear scan of the template, which comes from the config). */
function fill(template: string, data: unknown, name: string | undefined): string {
  return template.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, path: string) => {
    if (path === 'name') return name ?? '';
    const v = path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), data);
    return v === undefined ? '' : typeof v === 'object' ? (toMarkdown(v) ?? '') : String(v);
  });
}
