/**
 * The outputSchema a client is shown for a tool: the upstream's, as the rules shape tools/list
 * for the client's tags and variant (json-extract widens a wrapped text's, pattern-extract
 * publishes its own). A tool result must satisfy that one, in both eras: a legacy session lists
 * its tools with its tags, and a modern client lists them with the tags it sends on each
 * request. Worked out by shaping a listing of the one tool, once per tool, tags and variant,
 * and again when the upstream's schema changes.
 */
import type { Logger } from 'pino';
import type { Era } from '../../mcp/era.js';
import type { FeatureSet } from '../../mcp/features.js';
import type { CompiledRule } from '../../rules/compile.js';
import { runPipeline, type PipelineLimits } from '../../rules/run.js';
import { isObject } from '../../jsonrpc/message.js';

/** Schemas kept, at most; past it the cache starts again. */
const MAX_KEPT = 10_000;

/** A tool's outputSchema; null: it declares none. */
type Schema = Record<string, unknown> | null;

interface ListingContext {
  features: FeatureSet;
  variant?: string;
  era: Era;
  log: Logger;
}

export function shownSchemas(
  rules: CompiledRule[],
  limits?: PipelineLimits,
): (tool: string, declared: Schema, ctx: ListingContext) => Promise<Schema> {
  const kept = new Map<string, { declared: Schema; shown: Schema }>();
  return async function shownSchema(tool, declared, ctx) {
    const key = `${tool}\n${ctx.variant ?? ''}\n${ctx.features.toTags().join(',')}`;
    const hit = kept.get(key);
    if (hit && hit.declared === declared) return hit.shown;
    const listing = { tools: [{ name: tool, inputSchema: { type: 'object' }, ...(declared ? { outputSchema: declared } : {}) }] };
    const out = await runPipeline(
      rules,
      listing,
      { method: 'tools/list', features: ctx.features, variant: ctx.variant, era: ctx.era, log: ctx.log },
      limits,
    );
    const listed = (out.result?.tools as Array<Record<string, unknown>> | undefined)?.[0]?.outputSchema;
    const shown = out.result === undefined ? declared : isObject(listed) ? listed : null;
    if (kept.size >= MAX_KEPT) kept.clear();
    kept.set(key, { declared, shown });
    return shown;
  };
}
