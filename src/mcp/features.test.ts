import { describe, expect, it } from 'vitest';
import { FeatureSet, parseFeatures, parseTag } from './features.js';

describe('parseTag', () => {
  it('parses the four SEP forms and vendor tags', () => {
    expect(parseTag('agent')).toEqual({ kind: 'present', name: 'agent' });
    expect(parseTag('!interactive')).toEqual({ kind: 'absent', name: 'interactive' });
    expect(parseTag('format=json')).toEqual({ kind: 'equals', name: 'format', value: 'json' });
    expect(parseTag('format!=xml')).toEqual({ kind: 'notEquals', name: 'format', value: 'xml' });
    expect(parseTag('x-openai-format=v2')).toEqual({ kind: 'equals', name: 'x-openai-format', value: 'v2' });
    expect(parseTag('modality=image/png')).toEqual({ kind: 'equals', name: 'modality', value: 'image/png' });
  });

  it('rejects malformed tags with a reason', () => {
    for (const bad of ['@#$%', 'format==json', 'format=', '=json', '!a=b', 'Agent', 'a b', 'a=b\u0007', 'x'.repeat(65), '', 42, null, {}]) {
      expect(parseTag(bad), String(bad)).toHaveProperty('invalid');
    }
  });
});

describe('parseFeatures', () => {
  it('keeps valid tags, reports invalid ones, and mirrors declared capabilities', () => {
    const r = parseFeatures(['agent', '@#$%', 'format=json', 7, '!roots'], { sampling: {}, roots: {}, elicitation: { form: {} } });
    expect(r.accepted).toEqual(['agent', 'format=json', '!roots']);
    expect(r.ignored.map((i) => i.tag)).toEqual(['@#$%', 7]);
    expect(r.features.toTags()).toEqual(['!roots', 'agent', 'elicitation', 'format=json', 'sampling']);
  });

  it('ignores a non-array and everything past the limit', () => {
    expect(parseFeatures('agent').ignored[0].reason).toMatch(/must be an array/);
    const many = parseFeatures(Array.from({ length: 70 }, (_, i) => `t${i}`));
    expect(many.accepted.length).toBe(64);
    expect(many.ignored.length).toBe(6);
  });
});

describe('FeatureSet.satisfies', () => {
  const set = parseFeatures(['agent', 'format=json', '!interactive']).features;
  it('evaluates presence, absence, equality and negated equality', () => {
    const t = (s: string) => set.satisfies(parseTag(s) as never);
    expect([t('agent'), t('human'), t('!human'), t('!agent'), t('format'), t('format=json'), t('format=text'), t('format!=text'), t('format!=json'), t('verbosity!=compact'), t('!interactive')]).toEqual([
      true, false, true, false, true, true, false, true, false, false, true,
    ]);
  });
  it('is empty for a client that declared nothing', () => {
    expect(new FeatureSet([]).isEmpty).toBe(true);
  });
});
