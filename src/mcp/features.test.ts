import { describe, expect, it } from 'vitest';
import { FeatureSet, layerTags, MAX_FEATURES_HEADER_LENGTH, parseFeatures, parseTag, parseTagList } from './features.js';

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
    expect([
      t('agent'),
      t('human'),
      t('!human'),
      t('!agent'),
      t('format'),
      t('format=json'),
      t('format=text'),
      t('format!=text'),
      t('format!=json'),
      t('verbosity!=compact'),
      t('!interactive'),
    ]).toEqual([true, false, true, false, true, true, false, true, false, false, true]);
  });
  it('is empty for a client that declared nothing', () => {
    expect(new FeatureSet([]).isEmpty).toBe(true);
  });
});

describe('assigned tags (the MCP-Features header, a profile)', () => {
  it('fill the axes the client leaves open; the client wins on an axis it names', () => {
    const r = parseFeatures(
      ['format=markdown', '!agent'],
      { sampling: {} },
      [],
      ['format=json', 'agent', 'verbosity=compact', '!sampling'],
    );
    expect(r.features.toTags()).toEqual(['!agent', 'format=markdown', 'sampling', 'verbosity=compact']);
    expect(r.overridden).toEqual(['format=json', 'agent', '!sampling']);
  });

  it('a comma-separated list: blanks skipped, malformed items ignored with a reason, at most 64, at most 4 KiB', () => {
    expect(parseTagList(' agent, format=json ,, !interactive')).toEqual({ tags: ['agent', 'format=json', '!interactive'], ignored: [] });
    expect(parseTagList('agent, Format=JSON').ignored).toEqual([{ tag: 'Format=JSON', reason: expect.stringMatching(/does not match/) }]);
    const many = parseTagList(Array.from({ length: 70 }, (_, i) => `t${i}`).join(','));
    expect(many.tags.length).toBe(64);
    expect(many.ignored.map((i) => i.reason)).toEqual(Array(6).fill('more than 64 tags'));
    // Each ignored item is a log line: eight are named, the rest counted.
    const flood = parseTagList(',A'.repeat(2000));
    expect(flood.ignored.length).toBe(9);
    expect(flood.ignored[8]).toEqual({ tag: '…', reason: '1992 more items ignored (malformed, or more than 64 tags)' });
    const long = parseTagList(`agent,${'x'.repeat(MAX_FEATURES_HEADER_LENGTH)}`);
    expect(long.tags).toEqual([]);
    expect(long.ignored[0].reason).toMatch(/ignored whole/);
  });

  it('layers: the first layer that names an axis wins it, values of one layer together', () => {
    expect(
      layerTags([['format=json'], ['format=markdown', 'agent', 'modality=text', 'modality=image'], ['agent', 'modality=audio']]),
    ).toEqual({
      tags: ['format=json', 'agent', 'modality=text', 'modality=image'],
      overridden: ['format=markdown', 'agent', 'modality=audio'],
    });
  });
});
