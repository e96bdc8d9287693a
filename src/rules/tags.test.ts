import { describe, expect, it } from 'vitest';
import { builtinTransformers } from '../transformers/index.js';
import { compileRules, ruleSchema } from './compile.js';
import { profileTagWarnings } from './tags.js';

describe('profileTagWarnings', () => {
  const rules = compileRules(
    [ruleSchema.parse({ when: { features: ['format=json'] }, apply: [{ 'json-extract': {} }] })],
    builtinTransformers(),
  );

  it('names a profile tag no rule acts on, with its key and why', () => {
    expect(profileTagWarnings({ default: { features: ['format=json', 'format=yml', 'x-mine'] } }, rules)).toEqual([
      'profiles.default.features[1]: no rule acts on format=yml ("yml" is not a registered value of format (json, text, markdown)); its clients\' results are not shaped for it',
      "profiles.default.features[2]: no rule acts on x-mine; its clients' results are not shaped for it",
    ]);
  });
});
