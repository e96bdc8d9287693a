/**
 * The `contentNegotiation` section of the configuration: the extension on or off, the rules and plugins that reshape
 * results, the limits that bound the reshaping of untrusted output, and token counts.
 */
import { z } from 'zod';
import { ruleSchema } from '../rules/compile.js';

const SHAPING_LIMITS = { maxResultBytes: 1024 * 1024, timeBudgetMs: 50 };

export const shapingLimitsSchema = z
  .object({
    maxResultBytes: z
      .number()
      .int()
      .positive()
      .default(SHAPING_LIMITS.maxResultBytes)
      .describe('Results holding more text than this (characters) are relayed unchanged, never reshaped.'),
    timeBudgetMs: z
      .number()
      .int()
      .positive()
      .default(SHAPING_LIMITS.timeBudgetMs)
      .describe(
        'CPU time one result may spend in the transformers; past it the upstream ' +
          'result is relayed unchanged (counted in /metrics, logged once per tool).',
      ),
  })
  .strict()
  .describe('Limits that keep untrusted upstream output from stalling the proxy.');

const TOKEN_COUNTING = { count: false, maxChars: 256 * 1024 };

export const tokenCountingSchema = z
  .object({
    count: z
      .boolean()
      .default(TOKEN_COUNTING.count)
      .describe(
        'Count the tokens of negotiated results, in (from the upstream) and out (to the client), per method ' +
          'and tool in /metrics (o200k_base; loads ~70 MB and costs ~0.1 ms per KB, after the answer is sent).',
      ),
    maxChars: z
      .number()
      .int()
      .positive()
      .default(TOKEN_COUNTING.maxChars)
      .describe('Results with more text than this are not counted (counted as skipped).'),
  })
  .strict()
  .describe('Token counts of negotiated results, to see what negotiation saves.');

export const negotiationSchema = z
  .object({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        'Speak io.modelcontextprotocol/content-negotiation for the upstream and reshape results for clients that declare feature tags.',
      ),
    useDefaultRules: z
      .boolean()
      .default(true)
      .describe(
        "Append the built-in rules (the SEP's tag registry: format=json, format=markdown, " +
          'format=text, verbosity=compact, agent/human audience) after your own.',
      ),
    rules: z.array(ruleSchema).default([]).describe('Your rules, in execution order.'),
    plugins: z.array(z.string()).default([]).describe('ES modules (paths relative to the config file) exporting transformers.'),
    limits: shapingLimitsSchema.default(SHAPING_LIMITS),
    tokens: tokenCountingSchema.default(TOKEN_COUNTING),
  })
  .strict();
