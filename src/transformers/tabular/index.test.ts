import { decode } from '@toon-format/toon';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { testContext } from '../_shared/test-context.js';
import { tabular } from './index.js';

const ctx = testContext('tools/call', ['verbosity=compact']);
const rows = [
  { city: 'Bern', temperature_c: 8, dry: true },
  { city: 'Zurich', temperature_c: 9, dry: false },
  { city: 'Basel, BS', temperature_c: 10, dry: null },
];
const call = (data: unknown, options = {}) =>
  tabular.create(tabular.options.parse(options))(
    { content: [{ type: 'text', text: JSON.stringify(data, null, 2) }], structuredContent: { data } },
    ctx,
  ) as any;

describe('tabular', () => {
  it('writes a document with a table in it as TOON that decodes to the same data, and keeps structuredContent as JSON', () => {
    const data = { location: 'Switzerland', stations: rows };
    const out = call(data);
    expect(out.content[0].text).toContain('stations[3]{city,temperature_c,dry}:');
    expect(decode(out.content[0].text)).toEqual(data);
    expect(out.structuredContent).toEqual({ data });
    expect(out.content[0].text.length).toBeLessThan(JSON.stringify(data).length);
  });

  it('writes one table as CSV or TSV when asked, quoting and escaping what must be', () => {
    expect(call(rows, { encoding: 'csv' }).content[0].text).toBe('city,temperature_c,dry\nBern,8,true\nZurich,9,false\n"Basel, BS",10,');
    const tabbed = [...rows, { city: 'a\tb\nc', temperature_c: 1, dry: true }];
    expect(call(tabbed, { encoding: 'tsv' }).content[0].text.split('\n').at(-1)).toBe('a\\tb\\nc\t1\ttrue');
  });

  it('leaves JSON without a table, short arrays, mixed records and prose alone', () => {
    expect(call({ a: 1, b: [1, 2, 3] })).toBeUndefined();
    expect(call(rows.slice(0, 2))).toBeUndefined();
    expect(call([{ a: 1 }, { b: 2 }, { a: 3 }], { encoding: 'csv' })).toBeUndefined();
    expect(call({ stations: rows }, { encoding: 'csv' })).toBeUndefined(); // CSV: only a document that is one table
    const prose = tabular.create(tabular.options.parse({}))({ content: [{ type: 'text', text: 'It is 8°C.' }] }, ctx);
    expect(prose).toBeUndefined();
  });

  it('relabels a JSON resource it encodes, and no other resource', () => {
    const fn = tabular.create(tabular.options.parse({ encoding: 'csv' }));
    const out = fn(
      {
        contents: [
          { uri: 'x', mimeType: 'application/json', text: JSON.stringify(rows) },
          { uri: 'y', mimeType: 'text/plain', text: JSON.stringify(rows) },
        ],
      },
      testContext('resources/read', ['verbosity=compact']),
    ) as any;
    expect(out.contents[0].mimeType).toBe('text/csv');
    expect(out.contents[1].text).toBe(JSON.stringify(rows));
  });

  it('round-trips any JSON document it encodes (fast-check)', () => {
    const record = fc.record({
      id: fc.integer(),
      name: fc.string(),
      score: fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }),
      ok: fc.boolean(),
    });
    const doc = fc.oneof(
      fc.array(record, { minLength: 3, maxLength: 20 }),
      fc.record({ title: fc.string(), rows: fc.array(record, { minLength: 3, maxLength: 20 }), extra: fc.jsonValue() }),
    );
    fc.assert(
      fc.property(doc, (data) => {
        const normal = JSON.parse(JSON.stringify(data));
        const out = call(normal);
        if (out) expect(decode(out.content[0].text)).toEqual(normal);
      }),
      { numRuns: 300 },
    );
  });
});
