import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseFeatures } from '../../mcp/features.js';
import { compileRules } from '../../rules/compile.js';
import { DEFAULT_RULES } from '../../rules/defaults.js';
import { builtinTransformers } from '../../transformers/index.js';
import { shownSchemas } from './shown-schemas.js';

const rules = compileRules(DEFAULT_RULES, builtinTransformers());
const ctx = (tags: string[]) => ({ features: parseFeatures(tags).features, era: 'modern' as const, log: pino({ level: 'silent' }) });
const wrapper = { type: 'object', properties: { result: { type: 'string' } }, required: ['result'] };

describe('the outputSchema a client is shown', () => {
  it("is the upstream's as the list rules shape it for the same tags, worked out once per tool and tags", async () => {
    const shown = shownSchemas(rules);
    const json = await shown('echo', wrapper, ctx(['format=json']));
    expect(json).toEqual({ ...wrapper, properties: { result: { type: ['string', 'object'] } } });
    expect(await shown('echo', wrapper, ctx(['format=json']))).toBe(json);
    expect(await shown('echo', wrapper, ctx(['format=text']))).toBe(wrapper);
    expect(await shown('echo', null, ctx(['format=json']))).toBeNull();
    const relisted = { ...wrapper, title: 'echoOutput' };
    expect(await shown('echo', relisted, ctx(['format=json']))).toMatchObject({
      title: 'echoOutput',
      properties: { result: { type: ['string', 'object'] } },
    });
  });
});
