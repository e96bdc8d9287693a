import { describe, expect, it } from 'vitest';
import {
  advertise,
  parseVariantHints,
  rankVariants,
  scoreVariant,
  serverVariantsSchema,
  variantSchema,
  type VariantConfig,
} from './variants.js';

const v = (id: string, hints: Record<string, string>, status: 'stable' | 'experimental' | 'deprecated' = 'stable'): VariantConfig =>
  variantSchema.parse({ id, description: id, hints, status, ...(status === 'deprecated' ? { deprecationInfo: { message: 'old' } } : {}) });

describe('variant ranking (SEP-2053 rule-based scoring)', () => {
  it("reproduces the SEP's worked example", () => {
    const variants = [
      v('compact', { contextSize: 'compact' }),
      v('generic-plan', { modelFamily: 'any', useCase: 'planning' }),
      v('claude-execute', { modelFamily: 'anthropic', useCase: 'execution' }),
      v('claude-plan', { modelFamily: 'anthropic', useCase: 'planning' }),
    ];
    const client = parseVariantHints({ hints: { modelFamily: 'anthropic', useCase: ['planning', 'execution'] } });
    expect(variants.map((x) => [x.id, scoreVariant(x, client)])).toEqual([
      ['compact', 20],
      ['generic-plan', 150],
      ['claude-execute', 190],
      ['claude-plan', 200],
    ]);
    expect(rankVariants(variants, client).map((x) => x.id)).toEqual(['claude-plan', 'claude-execute', 'generic-plan', 'compact']);
  });

  it('honours preference order, penalises deprecated, puts stable first on ties and keeps config order', () => {
    const variants = [
      v('verbose', { contextSize: 'verbose' }),
      v('compact', { contextSize: 'compact' }),
      v('old-compact', { contextSize: 'compact' }, 'deprecated'),
      v('lab', { contextSize: 'compact' }, 'experimental'),
    ];
    const client = parseVariantHints({ hints: { contextSize: ['compact', 'verbose'] } });
    expect(rankVariants(variants, client).map((x) => x.id)).toEqual(['compact', 'verbose', 'lab', 'old-compact']);
    expect(rankVariants(variants, parseVariantHints(undefined)).map((x) => x.id)).toEqual(['verbose', 'compact', 'lab', 'old-compact']);
  });

  it('keeps a stable variant first unless the client asks for experimental ones', () => {
    const variants = [v('stable-one', {}), v('lab', { useCase: 'ide' }, 'experimental')];
    const wants = (status?: string) => parseVariantHints({ hints: { useCase: 'ide', ...(status ? { status } : {}) } });
    expect(rankVariants(variants, wants()).map((x) => x.id)).toEqual(['stable-one', 'lab']);
    expect(rankVariants(variants, wants('experimental')).map((x) => x.id)).toEqual(['lab', 'stable-one']);
  });

  it('advertises at most maxAdvertised (at least two) and says when there are more', () => {
    const ranked = [v('a', {}), v('b', {}), v('c', {})];
    expect(advertise(ranked, 1)).toMatchObject({ availableVariants: [{ id: 'a' }, { id: 'b' }], moreVariantsAvailable: true });
    expect(advertise(ranked, 5).moreVariantsAvailable).toBe(false);
  });

  it('drops malformed client hints instead of failing', () => {
    expect(parseVariantHints({ description: 5, hints: { a: 'x', b: ['y', 3], c: { no: 1 } } })).toEqual({ hints: { a: ['x'], b: ['y'] } });
  });
});

describe('variants config', () => {
  it('requires unique ids, a stable variant, known replacements and deprecation info', () => {
    const r = serverVariantsSchema.safeParse({
      variants: [
        { id: 'a', description: 'A', status: 'experimental' },
        { id: 'a', description: 'A2', status: 'deprecated', deprecationInfo: { message: 'x', replacement: 'zzz' } },
        { id: 'b', description: 'B', status: 'deprecated' },
      ],
    });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'variants.1.id: duplicate variant id "a"',
      'variants.1.deprecationInfo.replacement: no variant "zzz"',
      'variants.2.deprecationInfo: a deprecated variant needs deprecationInfo.message',
      'variants: at least one variant must be stable',
    ]);
  });
});
