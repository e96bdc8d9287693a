/**
 * Rules are data: `when` (methods, name globs, feature predicates, variants) → `apply` (an
 * ordered list of transformers with options), or `verbatim: true` (the result is exact contents:
 * see verbatim.ts). They are validated and compiled once, at config load, with the config path
 * of every problem; YAML order is execution order.
 */
import { z } from 'zod';
import { RuleError } from '../jsonrpc/errors.js';
import { parseTag, type FeatureTag } from '../mcp/features.js';
import { globMatcher, type NameMatcher } from './glob.js';
import type { Transformer, TransformFn } from '../transformers/contract.js';

export const SHAPED_METHODS = [
  'tools/call',
  'resources/read',
  'prompts/get',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
] as const;

const step = z.record(z.string(), z.unknown()).refine((o) => Object.keys(o).length === 1, {
  message: 'each apply step names exactly one transformer, e.g. `- json-extract: { keepText: false }`',
});

export const ruleSchema = z
  .object({
    name: z.string().optional().describe('A label for logs and explain.'),
    when: z
      .object({
        method: z
          .union([z.enum(SHAPED_METHODS), z.array(z.enum(SHAPED_METHODS)).min(1)], {
            error: `must be one of ${SHAPED_METHODS.join(', ')}, or a list of them`,
          })
          .optional()
          .describe('Methods whose results the rule shapes (default: all).'),
        name: z
          .union([z.string(), z.array(z.string()).min(1)])
          .optional()
          .describe('Glob(s) over the tool or prompt name or resource URI (* and ?); a list matches any of them.'),
        features: z
          .array(z.string())
          .default([])
          .describe('Feature predicates that must all hold: agent, !interactive, format=json, format!=xml.'),
        variant: z
          .union([z.string(), z.array(z.string()).min(1)])
          .optional()
          .describe('Server variant(s) the rule applies to (see serverVariants).'),
      })
      .strict()
      .default({ features: [] }),
    apply: z.array(step).min(1).optional().describe('Transformers in order, each `- name: { options }` (or `- name: {}`).'),
    verbatim: z
      .literal(true)
      .optional()
      .describe('The results are exact contents (a file, a diff): their text is never reshaped; structuredContent may be added beside it.'),
    onError: z
      .enum(['pass', 'fail'])
      .default('pass')
      .describe('pass: keep the original result and log a warning; fail: answer with an error.'),
  })
  .strict()
  .refine((r) => (r.apply === undefined) !== (r.verbatim === undefined), {
    message: 'a rule has either `apply` (transformers) or `verbatim: true`',
    path: ['apply'],
  });

export type RuleConfig = z.infer<typeof ruleSchema>;

export interface CompiledRule {
  label: string;
  methods?: Set<string>;
  name?: NameMatcher;
  variants?: Set<string>;
  features: FeatureTag[];
  /** The results it matches are exact contents: never reshaped (verbatim.ts). */
  verbatim: boolean;
  steps: Array<{ name: string; fn: TransformFn }>;
  onError: 'pass' | 'fail';
}

/** Compiles rules; throws an Error listing every problem with its path (`rules[2].apply[0]`). */
export function compileRules(
  rules: RuleConfig[],
  transformers: Map<string, Transformer>,
  path = 'contentNegotiation.rules',
): CompiledRule[] {
  const problems: string[] = [];
  const compiled = rules.map((rule, i) => {
    const at = `${path}[${i}]`;
    const features: FeatureTag[] = [];
    rule.when.features.forEach((raw, j) => {
      const t = parseTag(raw);
      if ('invalid' in t) problems.push(`${at}.when.features[${j}]: "${raw}" ${t.invalid}`);
      else features.push(t);
    });
    const steps = (rule.apply ?? []).flatMap((entry, j) => {
      const [name, raw] = Object.entries(entry)[0];
      const transformer = transformers.get(name);
      if (!transformer) {
        problems.push(`${at}.apply[${j}]: unknown transformer "${name}" (known: ${[...transformers.keys()].join(', ')})`);
        return [];
      }
      const parsed = transformer.options.safeParse(raw ?? undefined);
      if (!parsed.success) {
        for (const issue of parsed.error.issues)
          problems.push(`${at}.apply[${j}].${name}${issue.path.length ? '.' + issue.path.join('.') : ''}: ${issue.message}`);
        return [];
      }
      return [{ name, fn: transformer.create(parsed.data) }];
    });
    const methods =
      rule.when.method === undefined ? undefined : new Set(Array.isArray(rule.when.method) ? rule.when.method : [rule.when.method]);
    const variants =
      rule.when.variant === undefined ? undefined : new Set(Array.isArray(rule.when.variant) ? rule.when.variant : [rule.when.variant]);
    return {
      label: rule.name ?? `rule ${i + 1}`,
      methods,
      name: nameMatcher(rule.when.name),
      variants,
      features,
      verbatim: rule.verbatim === true,
      steps,
      onError: rule.onError,
    };
  });
  if (problems.length) throw new RuleError(problems);
  return compiled;
}

function nameMatcher(globs: string | string[] | undefined): NameMatcher | undefined {
  if (globs === undefined) return undefined;
  const matchers = (Array.isArray(globs) ? globs : [globs]).map(globMatcher);
  return matchers.length === 1 ? matchers[0] : (name) => matchers.some((m) => m(name));
}
