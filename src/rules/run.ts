/**
 * Folds a result through the rules that match it, in order. Transformers fail open: an error
 * keeps the result as it was before that step, logs a warning and counts it, unless the rule
 * says `onError: fail`. Limits protect the proxy from what upstreams send: a result larger
 * than `maxResultBytes` is never reshaped, and one whose reshaping outlasts `timeBudgetMs`
 * passes unchanged, whatever steps had already run. Exact contents (verbatim.ts) keep their
 * text whatever the steps made of it. A wrapped result (`{"result": <its text>}`, transformers/_shared/wrapped-text.ts)
 * is shaped as its text and wrapped again around what the steps made of it; if that would not
 * satisfy the tool's outputSchema, the result passes unchanged.
 */
import { ProxyError } from '../jsonrpc/errors.js';
import type { FeatureSet } from '../mcp/features.js';
import { Budget, BudgetExceeded, largerThan } from '../transformers/budget.js';
import type { CompiledRule } from './compile.js';
import { fileContentsIn, keepExact, mayGainStructure } from './verbatim.js';
import type { McpResult, TransformContext, TransformFn } from '../transformers/contract.js';
import { satisfiesSchema } from '../transformers/_shared/schema-check.js';
import { isWrappedText, resultSchema, rewrapped, unwrapped } from '../transformers/_shared/wrapped-text.js';

export interface PipelineLimits {
  /** Results with more characters of text than this are relayed unchanged. */
  maxResultBytes: number;
  /** Reshaping one result may take this long; past it, the result is relayed unchanged. */
  timeBudgetMs: number;
}

export function ruleMatches(rule: CompiledRule, method: string, name: string | undefined, features: FeatureSet, variant?: string): boolean {
  if (rule.methods && !rule.methods.has(method)) return false;
  if (rule.variants && (variant === undefined || !rule.variants.has(variant))) return false;
  if (rule.name && (name === undefined || !rule.name(name))) return false;
  return rule.features.every((f) => features.satisfies(f));
}

export interface PipelineOutcome {
  /** The new result, or undefined when no step changed anything (or the pipeline gave up). */
  result: McpResult | undefined;
  /** `rule label › transformer` for every step that changed the result. */
  applied: string[];
  failures: number;
  /** Why the result passed unchanged although rules matched: too large, or over its time budget. */
  skipped?: 'size' | 'budget';
  /** Why the result is exact contents, when it is: its text passed unchanged (structuredContent may have been added). */
  verbatim?: string;
}

/** Called after each transformer step (for /metrics). */
export type StepObserver = (transformer: string, seconds: number, failed: boolean) => void;

export async function runPipeline(
  rules: CompiledRule[],
  result: McpResult,
  ctx: TransformContext,
  limits?: PipelineLimits,
  observe?: StepObserver,
): Promise<PipelineOutcome> {
  const matching = rules.filter((rule) => ruleMatches(rule, ctx.method, ctx.name, ctx.features, ctx.variant));
  if (matching.length === 0) return { result: undefined, applied: [], failures: 0 };
  const exactRule = matching.find((rule) => rule.verbatim);
  const verbatim = exactRule ? `rule "${exactRule.label}" marks it as exact contents` : fileContentsIn(result);
  const wrapped = ctx.method === 'tools/call' && isWrappedText(result);
  const input = wrapped ? unwrapped(result) : result;
  if (verbatim && !mayGainStructure(ctx.method, input)) return { result: undefined, applied: [], failures: 0, verbatim };
  if (limits && largerThan(result, limits.maxResultBytes)) return { result: undefined, applied: [], failures: 0, skipped: 'size' };
  const budget = limits ? new Budget(limits.timeBudgetMs) : ctx.budget;
  // The steps shape a wrapped result's text; the schema they are told of is the one of that text.
  const stepCtx: TransformContext = {
    ...ctx,
    ...(budget ? { budget } : {}),
    ...(wrapped ? { outputSchema: resultSchema(ctx.outputSchema) } : {}),
  };
  let current = input;
  const applied: string[] = [];
  let failures = 0;
  for (const rule of matching) {
    for (const step of rule.steps) {
      const started = observe ? performance.now() : 0;
      let next: McpResult | undefined;
      try {
        budget?.checkNow();
        const out = timed(budget, step.fn, current, stepCtx);
        next = out instanceof Promise ? await out : out; // a synchronous step (every built-in) goes on without a turn of the queue
      } catch (err) {
        const label = `${rule.label} › ${step.name}`;
        observe?.(step.name, (performance.now() - started) / 1000, !(err instanceof BudgetExceeded));
        if (err instanceof BudgetExceeded) return { result: undefined, applied: [], failures, skipped: 'budget' };
        // Exact contents are relayed whatever a step made of them: a failure never costs the client its file.
        if (rule.onError === 'fail' && !verbatim) {
          throw new ProxyError('TRANSFORM_FAILED', `Transformer ${label} failed: ${(err as Error)?.message ?? String(err)}`, {
            step: label,
          });
        }
        failures++;
        ctx.log.warn(
          { step: label, method: ctx.method, name: ctx.name, err: (err as Error)?.message },
          'transformer failed; result passed on unchanged',
        );
        continue;
      }
      observe?.(step.name, (performance.now() - started) / 1000, false);
      if (next !== undefined && next !== current) {
        current = next;
        applied.push(`${rule.label} › ${step.name}`);
      }
    }
  }
  let shaped = applied.length ? current : undefined;
  if (wrapped && shaped) shaped = wrappedAgain(shaped, ctx.outputSchema);
  if (verbatim) {
    const kept = shaped ? keepExact(result, shaped) : undefined;
    return { result: kept, applied: kept ? applied : [], failures, verbatim };
  }
  return { result: shaped, applied: shaped ? applied : [], failures };
}

/** A shaped wrapped result, wrapped again; undefined (the upstream's result passes) when that would not satisfy the tool's outputSchema. */
function wrappedAgain(shaped: McpResult, schema: Record<string, unknown> | null | undefined): McpResult | undefined {
  const out = rewrapped(shaped);
  return out && satisfiesSchema(out.structuredContent, schema ?? undefined) ? out : undefined;
}

/**
 * Runs a step with the budget running: a synchronous step (every built-in) is counted exactly,
 * since between steps other results' steps may run; an asynchronous one until it settles.
 */
function timed(budget: Budget | undefined, fn: TransformFn, result: McpResult, ctx: TransformContext): ReturnType<TransformFn> {
  budget?.resume();
  let out: ReturnType<TransformFn>;
  try {
    out = fn(result, ctx);
  } catch (err) {
    budget?.pause();
    throw err;
  }
  if (out instanceof Promise) return out.finally(() => budget?.pause());
  budget?.pause();
  return out;
}
