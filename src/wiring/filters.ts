/**
 * Wiring of the filter chain both eras run through: server variants, profiles and content
 * negotiation with its rules, as one config says; a reload builds it again.
 */
import type { Config } from '../config/schema.js';
import { builtinChain, type FilterChain } from '../core/filters.js';
import { Profiles } from '../core/profiles.js';
import type { Filter } from '../extensions/contract.js';
import { VariantCatalog } from '../extensions/server-variants/scope.js';
import type { Metrics } from '../ops/metrics.js';
import type { Observers } from '../ops/observers.js';
import type { CompiledRule } from '../rules/compile.js';
import type { ToolCatalog } from '../upstream/tool-catalog.js';

/** `tools` outlives a reload (it describes the upstream); `extra` filters run after the built-in ones. */
export function createFilters(
  rules: CompiledRule[],
  settings: Config,
  o: { counters: Metrics['counters']; observers: Observers; tools: ToolCatalog; extra: Filter[] | undefined },
): FilterChain {
  return builtinChain({
    rules,
    variants: new VariantCatalog(settings.serverVariants),
    profiles: new Profiles(settings.profiles),
    limits: settings.contentNegotiation.limits,
    counters: o.counters,
    observeStep: o.observers.step,
    observeTokens: o.observers.tokens,
    tools: o.tools,
    extra: o.extra,
  });
}
