/**
 * Which feature tags the rules act on. A client is told only about the tags that change what
 * it gets (the proxy announces nothing it does not honour), and a rule that waits for a tag no
 * client is known to send is worth a warning: it is most often a typo (`format=yml`).
 */
import { parseTag, SEARCH_TAG, type FeatureTag } from '../mcp/features.js';
import type { CompiledRule, RuleConfig } from './compile.js';

/** The content-negotiation SEP's registry: names, and the values of the equality tags. */
const REGISTRY: Record<string, string[] | undefined> = {
  agent: undefined,
  human: undefined,
  'mcp-capable': undefined,
  interactive: undefined,
  sampling: undefined,
  elicitation: undefined,
  roots: undefined,
  tasks: undefined,
  verbosity: ['compact', 'standard', 'verbose'],
  format: ['json', 'text', 'markdown'],
  // Sampling modalities (SEP-2278) reach rules as modality=<name>; any name is valid.
  modality: undefined,
  // The proxy's own: search instead of the tool catalog.
  tools: ['search'],
};

/** Tags the proxy acts on itself, whatever the rules say. */
const BUILT_IN: FeatureTag[] = [SEARCH_TAG];

/** Whether the proxy or some rule looks at this tag: at its name, or for `name=value` at that value or any. */
export function actedOn(rules: CompiledRule[], tag: FeatureTag): boolean {
  const matches = (p: FeatureTag) => p.name === tag.name && (tag.kind !== 'equals' || p.kind !== 'equals' || p.value === tag.value);
  return BUILT_IN.some(matches) || rules.some((rule) => rule.features.some(matches));
}

/** Tags no rule acts on, of those a client declared (raw strings as it sent them). */
export function tagsNotActedOn(rules: CompiledRule[], declared: string[]): string[] {
  return declared.filter((raw) => {
    const tag = parseTag(raw);
    return !('invalid' in tag) && !actedOn(rules, tag);
  });
}

/** Why a well-formed tag is outside the registry, or undefined when a client may send it. */
export function unregisteredTag(tag: FeatureTag): string | undefined {
  if (tag.name.startsWith('x-')) return undefined;
  if (!(tag.name in REGISTRY))
    return `"${tag.name}" is not a registered tag (registered: ${Object.keys(REGISTRY).join(', ')}, or x-* for your own)`;
  const values = REGISTRY[tag.name];
  if (values && (tag.kind === 'equals' || tag.kind === 'notEquals') && !values.includes(tag.value))
    return `"${tag.value}" is not a registered value of ${tag.name} (${values.join(', ')})`;
  return undefined;
}

/** Warnings for profile tags no rule acts on: given to clients, they change nothing (most often a typo). */
export function profileTagWarnings(profiles: Record<string, { features: string[] }>, rules: CompiledRule[]): string[] {
  return Object.entries(profiles).flatMap(([name, p]) =>
    p.features.flatMap((raw, i) => {
      const tag = parseTag(raw);
      if ('invalid' in tag || actedOn(rules, tag)) return [];
      const why = unregisteredTag(tag);
      return [
        `profiles.${name}.features[${i}]: no rule acts on ${raw}${why ? ` (${why})` : ''}; its clients' results are not shaped for it`,
      ];
    }),
  );
}

/** Warnings for rule predicates no client is known to send, with their config paths. */
export function ruleTagWarnings(rules: RuleConfig[], path = 'contentNegotiation.rules'): string[] {
  return rules.flatMap((rule, i) =>
    rule.when.features.flatMap((raw, j) => {
      const tag = parseTag(raw);
      const why = 'invalid' in tag ? undefined : unregisteredTag(tag);
      return why ? [`${path}[${i}].when.features[${j}]: ${why}; no client is known to send it`] : [];
    }),
  );
}
