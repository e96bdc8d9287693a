import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serverVariantsSchema } from '../extensions/server-variants/variants.js';
import { VariantCatalog } from '../extensions/server-variants/scope.js';
import { compileRules, ruleSchema } from '../rules/compile.js';
import type { Transformer } from '../transformers/contract.js';
import { builtinChain } from './filters.js';

const log = pino({ level: 'silent' });
const NEGOTIATION = { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features: ['agent'] } } };

/** Writes the output schema the pipeline handed it into the result. */
const schemaReporter: Transformer<Record<string, never>> = {
  name: 'report-schema',
  description: 'test',
  options: z.object({}).default({}) as z.ZodType<Record<string, never>>,
  create: () => (result, ctx) => ({ ...result, seenSchema: ctx.outputSchema ?? null }),
};
const rules = compileRules([ruleSchema.parse({ when: { method: 'tools/call' }, apply: [{ 'report-schema': {} }] })], new Map([['report-schema', schemaReporter as Transformer<any>]]));

describe('the filter chain across a reload', () => {
  it("keeps the output schemas modern requests learnt: a chain built again sees the tools listed under the old one", async () => {
    const outputSchemas = new Map<string, Record<string, unknown>>();
    const build = () => builtinChain({ rules, variants: new VariantCatalog(serverVariantsSchema.parse({})), outputSchemas });
    const schema = { type: 'object', properties: { n: { type: 'number' } } };

    const before = build().forRequest(NEGOTIATION, {}, log);
    await before.shape('tools/list', undefined, { tools: [{ name: 'count', inputSchema: { type: 'object' }, outputSchema: schema }] });
    const after = build().forRequest(NEGOTIATION, {}, log);
    expect(await after.shape('tools/call', 'count', { content: [] })).toMatchObject({ seenSchema: schema });
  });
});
