/**
 * `markdown`: structured data rendered for people. For tools/call, `structuredContent` (or a
 * JSON text block) becomes one markdown text block; `structuredContent` stays when the tool
 * declares an outputSchema (clients validate it), otherwise it is dropped. JSON resources
 * become text/markdown. An optional template fills `{{key}}` / `{{a.b}}` from the data.
 */
import { z } from 'zod';
import { parseJsonDocument } from '../extract.js';
import { toMarkdown } from '../render.js';
import { contentOf, isTextBlock, type McpResult, type Transformer } from '../../pipeline/types.js';

const options = z
  .object({
    /** Heading for the rendered data; `{{name}}` is the tool name or resource URI. */
    title: z.string().optional(),
    /** A markdown template with {{path}} placeholders, used instead of the generic rendering. */
    template: z.string().optional(),
  })
  .strict()
  .default({});

export const markdown: Transformer<z.infer<typeof options>> = {
  name: 'markdown',
  description: 'Render structured data (structuredContent, JSON text, JSON resources) as markdown: lists, tables, sections.',
  options,
  create({ title, template }) {
    const render = (data: unknown, name: string | undefined) =>
      template ? fill(template, data, name) : toMarkdown(data, title?.replace(/\{\{name\}\}/g, name ?? ''));
    return function markdownFn(result, ctx) {
      if (ctx.method === 'resources/read') return resourceToMarkdown(result, (d) => render(d, ctx.name));
      if (ctx.method !== 'tools/call' || result.isError === true) return undefined;
      const content = contentOf(result) ?? [];
      const texts = content.filter(isTextBlock);
      const data = result.structuredContent ?? (texts.length === 1 ? parseJsonDocument(texts[0].text) : undefined);
      if (data === undefined || data === null || typeof data !== 'object') return undefined;
      const out: McpResult = { ...result, content: [{ type: 'text', text: render(data, ctx.name) }, ...content.filter((b) => !isTextBlock(b))] };
      if (!ctx.outputSchema) delete out.structuredContent;
      return out;
    };
  },
};

function resourceToMarkdown(result: McpResult, render: (data: unknown) => string): McpResult | undefined {
  if (!Array.isArray(result.contents)) return undefined;
  let changed = false;
  const contents = result.contents.map((c: Record<string, unknown>) => {
    if (typeof c?.text !== 'string') return c;
    const data = parseJsonDocument(c.text);
    if (data === undefined || data === null) return c;
    changed = true;
    return { ...c, mimeType: 'text/markdown', text: render(data) };
  });
  return changed ? { ...result, contents } : undefined;
}

function fill(template: string, data: unknown, name: string | undefined): string {
  return template.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, path: string) => {
    if (path === 'name') return name ?? '';
    const v = path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), data);
    return v === undefined ? '' : typeof v === 'object' ? toMarkdown(v) : String(v);
  });
}
