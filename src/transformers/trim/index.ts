/**
 * `trim` (verbosity=compact): shorter text for small contexts. Results: named sections
 * (Examples, Tips, …) dropped, whitespace collapsed, length capped with an explicit marker.
 * Lists (tools, prompts, resources): descriptions cut to their first sentence, and input-schema
 * property descriptions dropped.
 */
import { z } from 'zod';
import { mapTexts } from '../texts.js';
import type { McpResult, Transformer } from '../../pipeline/types.js';

const options = z
  .object({
    maxLength: z.number().int().positive().default(4000),
    dropSections: z.array(z.string()).default(['Examples', 'Example', 'Tips', 'Notes', 'See also']),
    /** Shorten descriptions in tools/list, prompts/list and resources/list. */
    lists: z.boolean().default(true),
  })
  .strict()
  .default({ maxLength: 4000, dropSections: ['Examples', 'Example', 'Tips', 'Notes', 'See also'], lists: true });

export const trim: Transformer<z.infer<typeof options>> = {
  name: 'trim',
  description: 'Compact output: drop sections such as Examples and Tips, collapse whitespace, cap length; first-sentence descriptions in lists.',
  options,
  create({ maxLength, dropSections, lists }) {
    const drop = new Set(dropSections.map((s) => s.toLowerCase()));
    const shorten = (text: string) => cap(collapse(dropNamedSections(text, drop)), maxLength);
    return function trimFn(result, ctx) {
      if (ctx.method.endsWith('/list')) return lists ? trimList(result) : undefined;
      return mapTexts(result, ctx.method, shorten);
    };
  },
};

/** Removes markdown sections whose heading is in `names`, up to the next heading of the same or a higher level. */
export function dropNamedSections(text: string, names: Set<string>): string {
  const out: string[] = [];
  let skipLevel = 0;
  for (const line of text.split('\n')) {
    const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const level = h[1].length;
      if (skipLevel && level > skipLevel) continue;
      skipLevel = names.has(h[2].replace(/[*_:]/g, '').trim().toLowerCase()) ? level : 0;
      if (skipLevel) continue;
    } else if (skipLevel) continue;
    out.push(line);
  }
  return out.join('\n');
}

function collapse(text: string): string {
  return text.replace(/[ \t]+$/gm, '').replace(/\n{3,}/g, '\n\n').trim();
}

function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max).trimEnd()}… [truncated ${text.length - max} characters]`;
}

export function firstSentence(text: string): string {
  const m = /^[\s\S]*?[.!?](?=\s|$)/.exec(text.trim());
  return (m ? m[0] : text.trim()).replace(/\s+/g, ' ');
}

function trimList(result: McpResult): McpResult | undefined {
  const key = ['tools', 'prompts', 'resources', 'resourceTemplates'].find((k) => Array.isArray(result[k]));
  if (!key) return undefined;
  let changed = false;
  const items = (result[key] as Array<Record<string, unknown>>).map((item) => {
    if (!item || typeof item !== 'object') return item;
    const next: Record<string, unknown> = { ...item };
    if (typeof item.description === 'string') next.description = firstSentence(item.description);
    if (item.inputSchema && typeof item.inputSchema === 'object') next.inputSchema = withoutDescriptions(item.inputSchema);
    if (Array.isArray(item.arguments)) {
      next.arguments = item.arguments.map((a: Record<string, unknown>) => (typeof a?.description === 'string' ? { ...a, description: firstSentence(a.description) } : a));
    }
    if (JSON.stringify(next) !== JSON.stringify(item)) changed = true;
    return next;
  });
  return changed ? { ...result, [key]: items } : undefined;
}

/** A JSON Schema without the `description` of its properties (the structure stays). */
function withoutDescriptions(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDescriptions);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'properties' && v && typeof v === 'object') {
      out.properties = Object.fromEntries(Object.entries(v).map(([name, prop]) => {
        const { description: _drop, ...rest } = (prop ?? {}) as Record<string, unknown>;
        return [name, withoutDescriptions(rest)];
      }));
    } else out[k] = typeof v === 'object' ? withoutDescriptions(v) : v;
  }
  return out;
}
