/**
 * Server variants (SEP-2053, io.modelcontextprotocol/server-variants): the configured views of
 * the upstream, and their ranking for a client's `variantHints` with the SEP's rule-based
 * scoring. Variants shape what a client sees; they are never permissions.
 */
import { z } from 'zod';

export const SERVER_VARIANTS = 'io.modelcontextprotocol/server-variants';
export const VARIANT_META_KEY = 'io.modelcontextprotocol/server-variant';

const globs = z
  .object({ include: z.array(z.string()).default(['*']), exclude: z.array(z.string()).default([]) })
  .strict()
  .default({ include: ['*'], exclude: [] });
const overrides = z.record(z.string(), z.object({ title: z.string().optional(), description: z.string().optional() }).strict()).default({});

export const variantSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" and "-", at most 64'),
    description: z.string().min(1),
    hints: z
      .record(z.string(), z.string())
      .default({})
      .describe('Key-value hints (modelFamily, useCase, contextSize, reverse-DNS custom keys).'),
    status: z.enum(['stable', 'experimental', 'deprecated']).default('stable'),
    deprecationInfo: z
      .object({ message: z.string(), replacement: z.string().optional(), removalDate: z.string().optional() })
      .strict()
      .optional(),
    tools: globs.describe('Tool names visible in this variant (globs).'),
    resources: globs.describe('Resource URIs (and URI templates) visible in this variant (globs).'),
    prompts: globs.describe('Prompt names visible in this variant (globs).'),
    toolOverrides: overrides.describe('Per tool name: a replacement title and/or description.'),
    promptOverrides: overrides.describe('Per prompt name: a replacement title and/or description.'),
    simplifySchemas: z
      .object({ dropOptional: z.boolean().default(false), dropDescriptions: z.boolean().default(false) })
      .strict()
      .default({ dropOptional: false, dropDescriptions: false })
      .describe('Input-schema simplification in tools/list.'),
    upstreamVariant: z.string().optional().describe('Variant id to forward when the upstream supports variants itself.'),
  })
  .strict();

export type VariantConfig = z.infer<typeof variantSchema>;

export const serverVariantsSchema = z
  .object({
    variants: z.array(variantSchema).default([]).describe('The variants offered; none = the extension is off.'),
    maxAdvertised: z
      .number()
      .int()
      .min(1)
      .max(50)
      .default(5)
      .describe('How many ranked variants initialize returns (moreVariantsAvailable says when there are more).'),
    cursorSecret: z.string().optional().describe('HMAC key binding pagination cursors to their variant (random per process when unset).'),
    mergeUpstream: z
      .boolean()
      .default(true)
      .describe(
        'When the upstream offers variants itself, add those not mapped by an upstreamVariant here to the list (as pass-through views).',
      ),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    const ids = new Set<string>();
    cfg.variants.forEach((v, i) => {
      if (ids.has(v.id)) ctx.addIssue({ code: 'custom', path: ['variants', i, 'id'], message: `duplicate variant id "${v.id}"` });
      ids.add(v.id);
    });
    cfg.variants.forEach((v, i) => {
      const replacement = v.deprecationInfo?.replacement;
      if (replacement !== undefined && !ids.has(replacement))
        ctx.addIssue({ code: 'custom', path: ['variants', i, 'deprecationInfo', 'replacement'], message: `no variant "${replacement}"` });
      if (v.status === 'deprecated' && !v.deprecationInfo)
        ctx.addIssue({
          code: 'custom',
          path: ['variants', i, 'deprecationInfo'],
          message: 'a deprecated variant needs deprecationInfo.message',
        });
    });
    if (cfg.variants.length > 0 && !cfg.variants.some((v) => v.status === 'stable')) {
      ctx.addIssue({ code: 'custom', path: ['variants'], message: 'at least one variant must be stable' });
    }
  });

export type ServerVariantsConfig = z.infer<typeof serverVariantsSchema>;

/** A client's `variantHints`, validated (untrusted: bad fields are dropped). */
export interface VariantHints {
  description?: string;
  hints: Record<string, string[]>;
}

export function parseVariantHints(raw: unknown): VariantHints {
  const out: VariantHints = { hints: {} };
  if (typeof raw !== 'object' || raw === null) return out;
  const { description, hints } = raw as { description?: unknown; hints?: unknown };
  if (typeof description === 'string') out.description = description.slice(0, 1000);
  if (typeof hints === 'object' && hints !== null) {
    for (const [key, value] of Object.entries(hints).slice(0, 32)) {
      const values =
        typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
      if (values.length) out.hints[key] = values.slice(0, 16);
    }
  }
  return out;
}

/** The SEP's weights: a match on the client's first preference scores full, later ones less. */
const WEIGHTS: Record<string, { score: number; step: number }> = {
  modelFamily: { score: 100, step: 10 },
  useCase: { score: 80, step: 10 },
  contextSize: { score: 40, step: 5 },
};
const OTHER_HINT = { score: 20, step: 5 };

export function scoreVariant(variant: VariantConfig, client: VariantHints): number {
  let score = 0;
  for (const [key, value] of Object.entries(variant.hints)) {
    const prefs = client.hints[key];
    const weight = WEIGHTS[key] ?? OTHER_HINT;
    const idx = prefs?.indexOf(value) ?? -1;
    if (idx >= 0) score += Math.max(weight.score - idx * weight.step, weight.step);
    else if (key === 'modelFamily' && value === 'any') score += 50;
  }
  if (variant.status === 'stable') score += 20;
  if (variant.status === 'deprecated') score -= 100;
  return score;
}

/**
 * Ranks variants for a client: score descending, stable before others on ties, then config
 * order (deterministic). The first is stable unless the client asked for experimental ones
 * (hint `status: experimental`).
 */
export function rankVariants(variants: VariantConfig[], client: VariantHints): VariantConfig[] {
  const ranked = variants
    .map((v, i) => ({ v, i, score: scoreVariant(v, client) }))
    .sort((a, b) => b.score - a.score || Number(b.v.status === 'stable') - Number(a.v.status === 'stable') || a.i - b.i)
    .map((r) => r.v);
  const wantsExperimental = client.hints.status?.includes('experimental') ?? false;
  if (!wantsExperimental && ranked[0]?.status !== 'stable') {
    const firstStable = ranked.findIndex((v) => v.status === 'stable');
    if (firstStable > 0) ranked.unshift(...ranked.splice(firstStable, 1));
  }
  return ranked;
}

/** The `availableVariants` payload: the first `max` ranked variants, at least 2 when there are 2. */
export function advertise(ranked: VariantConfig[], max: number): { availableVariants: unknown[]; moreVariantsAvailable: boolean } {
  const shown = ranked.slice(0, Math.max(max, Math.min(2, ranked.length)));
  return {
    availableVariants: shown.map((v) => ({
      id: v.id,
      description: v.description,
      ...(Object.keys(v.hints).length ? { hints: v.hints } : {}),
      status: v.status,
      ...(v.deprecationInfo ? { deprecationInfo: v.deprecationInfo } : {}),
    })),
    moreVariantsAvailable: shown.length < ranked.length,
  };
}

/**
 * The HTTP `MCP-Server-Variant` header as the request's variant, unless its `_meta` names one
 * already (`_meta` wins). Returns the request unchanged when there is nothing to do.
 */
export function withVariantHeader<T extends { method?: string; id?: unknown; params?: Record<string, unknown> }>(
  msg: T,
  header: string | undefined,
): T {
  if (header === undefined || msg.method === undefined || msg.id === undefined) return msg;
  const meta = (msg.params?._meta ?? {}) as Record<string, unknown>;
  if (meta[VARIANT_META_KEY] !== undefined) return msg;
  return { ...msg, params: { ...msg.params, _meta: { ...meta, [VARIANT_META_KEY]: header } } };
}
