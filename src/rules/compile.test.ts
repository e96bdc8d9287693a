import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseFeatures } from '../mcp/features.js';
import { testContext } from '../transformers/_shared/test-context.js';
import { builtinTransformers } from '../transformers/index.js';
import { RuleError } from '../jsonrpc/errors.js';
import { compileRules, ruleSchema } from './compile.js';
import { runPipeline } from './run.js';
import type { Transformer } from '../transformers/contract.js';

/** A transformer that appends its tag to the first text block, or throws. */
const tagger: Transformer<{ tag: string; fail: boolean }> = {
  name: 'tag',
  description: 'test',
  options: z.object({ tag: z.string(), fail: z.boolean().default(false) }),
  create:
    ({ tag, fail }) =>
    (result) => {
      if (fail) throw new Error('boom');
      const [first] = result.content as Array<{ text: string }>;
      return { ...result, content: [{ type: 'text', text: first.text + tag }] };
    },
};
const transformers = new Map([...builtinTransformers(), ['tag', tagger]]);
const rules = (yamlish: unknown[]) =>
  compileRules(
    yamlish.map((r) => ruleSchema.parse(r)),
    transformers,
  );
const input = { content: [{ type: 'text', text: '' }] };

describe('rules', () => {
  it('run in file order, and steps in list order', async () => {
    const compiled = rules([
      { when: { features: ['agent'] }, apply: [{ tag: { tag: 'A' } }, { tag: { tag: 'B' } }] },
      { apply: [{ tag: { tag: 'C' } }] },
      { when: { features: ['human'] }, apply: [{ tag: { tag: 'X' } }] },
    ]);
    const out = await runPipeline(compiled, input, testContext('tools/call', ['agent']));
    expect(out.result?.content).toEqual([{ type: 'text', text: 'ABC' }]);
    expect(out.applied).toEqual(['rule 1 › tag', 'rule 1 › tag', 'rule 2 › tag']);
  });

  it('match on method and name glob', async () => {
    const compiled = rules([{ when: { method: 'tools/call', name: 'get_*' }, apply: [{ tag: { tag: '!' } }] }]);
    const ctx = (method: string, name: string) => testContext(method, [], { name });
    expect((await runPipeline(compiled, input, ctx('tools/call', 'get_weather'))).result).toBeDefined();
    expect((await runPipeline(compiled, input, ctx('tools/call', 'plan'))).result).toBeUndefined();
    expect((await runPipeline(compiled, input, ctx('prompts/get', 'get_x'))).result).toBeUndefined();
  });

  it('fail open by default, and fail the request with onError: fail', async () => {
    const open = rules([{ apply: [{ tag: { tag: 'x', fail: true } }, { tag: { tag: 'ok' } }] }]);
    const out = await runPipeline(open, input, testContext('tools/call'));
    expect([out.result?.content, out.failures]).toEqual([[{ type: 'text', text: 'ok' }], 1]);
    const strict = rules([{ apply: [{ tag: { tag: 'x', fail: true } }], onError: 'fail' }]);
    await expect(runPipeline(strict, input, testContext('tools/call'))).rejects.toMatchObject({ code: 'TRANSFORM_FAILED' });
  });

  it('report every problem with its path at compile time', () => {
    try {
      rules([{ when: { features: ['format==json'] }, apply: [{ nope: {} }, { trim: { maxLength: -1 } }] }]);
      throw new Error('expected a RuleError');
    } catch (err) {
      expect(err).toBeInstanceOf(RuleError);
      expect((err as RuleError).problems).toEqual([
        'contentNegotiation.rules[0].when.features[0]: "format==json" does not match name, !name, name=value or name!=value',
        'contentNegotiation.rules[0].apply[0]: unknown transformer "nope" (known: json-extract, pattern-extract, markdown, plain-text, trim, tabular, audience, tag)',
        'contentNegotiation.rules[0].apply[1].trim.maxLength: Too small: expected number to be >0',
      ]);
    }
  });

  it('evaluate feature predicates against the negotiated set', () => {
    const [rule] = rules([{ when: { features: ['agent', '!interactive', 'format!=xml'] }, apply: [{ trim: {} }] }]);
    const set = (tags: string[]) => parseFeatures(tags).features;
    expect(rule.features.every((f) => set(['agent', 'format=json']).satisfies(f))).toBe(true);
    expect(rule.features.every((f) => set(['agent', 'interactive', 'format=json']).satisfies(f))).toBe(false);
  });
});
