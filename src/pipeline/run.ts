/**
 * Folds a result through the rules that match it, in order. Transformers fail open: an error
 * keeps the result as it was before that step, logs a warning and counts it, unless the rule
 * says `onError: fail`.
 */
import { ProxyError } from '../jsonrpc/errors.js';
import type { FeatureSet } from '../negotiation/features.js';
import type { CompiledRule } from './rules.js';
import type { McpResult, TransformContext } from './types.js';

export function ruleMatches(rule: CompiledRule, method: string, name: string | undefined, features: FeatureSet, variant?: string): boolean {
  if (rule.methods && !rule.methods.has(method)) return false;
  if (rule.variants && (variant === undefined || !rule.variants.has(variant))) return false;
  if (rule.name && (name === undefined || !rule.name.test(name))) return false;
  return rule.features.every((f) => features.satisfies(f));
}

export interface PipelineOutcome {
  /** The new result, or undefined when no step changed anything. */
  result: McpResult | undefined;
  /** `rule label › transformer` for every step that changed the result. */
  applied: string[];
  failures: number;
}


export async function runPipeline(rules: CompiledRule[], result: McpResult, ctx: TransformContext): Promise<PipelineOutcome> {
  let current = result;
  let changed = false;
  const applied: string[] = [];
  let failures = 0;
  for (const rule of rules) {
    if (!ruleMatches(rule, ctx.method, ctx.name, ctx.features, ctx.variant)) continue;
    for (const step of rule.steps) {
      const label = `${rule.label} › ${step.name}`;
      try {
        const next = await step.fn(current, ctx);
        if (next !== undefined && next !== current) {
          current = next;
          changed = true;
          applied.push(label);
        }
      } catch (err) {
        if (rule.onError === 'fail') {
          throw new ProxyError('TRANSFORM_FAILED', `Transformer ${label} failed: ${(err as Error)?.message ?? String(err)}`, { step: label });
        }
        failures++;
        ctx.log.warn({ step: label, method: ctx.method, name: ctx.name, err: (err as Error)?.message }, 'transformer failed; result passed on unchanged');
      }
    }
  }
  return { result: changed ? current : undefined, applied, failures };
}
