/**
 * "No fact lost": every number, name, URL and key of a result survives every built-in
 * transformer (in `content` or `structuredContent`), on realistic generated results (prose with
 * numbers and units, JSON documents, markdown with headings, tables, lists, links and code) and
 * on what real MCP servers answered (test/recordings). What `verbosity=compact` drops on purpose
 * (Examples and Tips sections) is left out of its expectation; compact lists keep every name,
 * type, enum, required field and constraint and shorten descriptions without erasing them.
 */
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { payload } from '../../test/helpers/payload.js';
import { entryContract } from '../../test/recordings/catalog-contract.js';
import { loadRecordings } from '../../test/recordings/record.js';
import { parseFeatures } from '../mcp/features.js';
import { builtinTransformers } from './index.js';
import type { McpResult, TransformContext } from './contract.js';
import { factsOf, missingFacts } from './_shared/facts.js';
import { isPlainObject } from './_shared/json.js';
import { dropNamedSections } from './trim/prose.js';

const log = pino({ level: 'silent' });
const transformers = [...builtinTransformers().values()];
const FEATURES = [['agent', 'format=json'], ['human', 'format=markdown'], ['format=text'], ['verbosity=compact'], ['agent'], ['human']];
const COMPACT_DROPS = new Set(['examples', 'example', 'tips', 'tip', 'see also']);

/** The payload minus what compact drops on purpose: the named sections of each text. */
function withoutDroppedSections(values: unknown[]): unknown[] {
  return values.map((v) => (typeof v === 'string' ? dropNamedSections(v.split('\n'), COMPACT_DROPS).join('\n') : v));
}

function lostBy(name: string, method: string, tags: string[], result: McpResult, out: McpResult | undefined): string[] {
  if (out === undefined) return [];
  const before = name === 'trim' ? withoutDroppedSections(payload(result)) : payload(result);
  return missingFacts(before, payload(out));
}

const ctxFor = (method: string, tags: string[], name = 'tool'): TransformContext => ({
  method,
  name,
  features: parseFeatures(tags).features,
  era: 'legacy',
  log,
});

// --- realistic generators --------------------------------------------------------------

const WORDS = [
  'weather',
  'forecast',
  'humidity',
  'wind',
  'journey',
  'train',
  'platform',
  'budget',
  'meeting',
  'report',
  'status',
  'release',
  'version',
  'review',
  'notes',
  'conditions',
  'cloudy',
  'sunny',
  'approved',
  'pending',
];
const NAMES = ['Bern', 'Zurich', 'Lugano', 'Ada Lovelace', 'Charles Babbage', 'Analytical Engine', 'Grace Hopper', 'Geneva', 'Olten'];
const UNITS = ['°C', '%', ' km/h', ' kg', ' ms', ' MB', ''];
const word = fc.oneof(fc.constantFrom(...WORDS), fc.stringMatching(/^[a-z]{2,9}$/));
const name = fc.constantFrom(...NAMES);
const num = fc.oneof(
  fc.integer({ min: -40, max: 100_000 }).map(String),
  fc.float({ min: 0, max: 1000, noNaN: true }).map((f) => f.toFixed(2)),
);
const measure = fc.tuple(num, fc.constantFrom(...UNITS)).map(([n, u]) => n + u);
const url = fc.tuple(word, fc.nat(999)).map(([w, n]) => `https://example.org/${w}/${n}`);
const token = fc.oneof(
  { weight: 5, arbitrary: word },
  { weight: 2, arbitrary: name },
  { weight: 2, arbitrary: measure },
  { weight: 1, arbitrary: url },
);
const sentence = fc.array(token, { minLength: 3, maxLength: 10 }).map((ts) => {
  const s = ts.join(' ');
  return `${s.charAt(0).toUpperCase()}${s.slice(1)}.`;
});
const label = fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => ws.join(' ').replace(/^./, (c) => c.toUpperCase()));
const inline = fc.oneof(
  sentence,
  fc.tuple(word, sentence).map(([w, s]) => `**${w}** ${s}`),
  fc.tuple(word, sentence).map(([w, s]) => `_${w}_ and \`${w}_id\` ${s}`),
  fc.tuple(word, url, sentence).map(([w, u, s]) => `See [${w}](${u}) or ![${w}](${u}). ${s}`),
  fc.tuple(sentence, url).map(([s, u]) => `${s} <${u}>`),
);
const heading = fc.tuple(fc.integer({ min: 1, max: 3 }), label).map(([level, l]) => `${'#'.repeat(level)} ${l}`);
const table = fc
  .tuple(
    fc.array(label, { minLength: 1, maxLength: 4 }),
    fc.array(fc.array(fc.oneof(measure, word, name), { minLength: 4, maxLength: 4 }), { minLength: 1, maxLength: 5 }),
  )
  .map(([head, rows]) =>
    [
      `| ${head.join(' | ')} |`,
      `|${head.map(() => '---').join('|')}|`,
      ...rows.map((r) => `| ${r.slice(0, head.length).join(' | ')} |`),
    ].join('\n'),
  );
const list = fc
  .array(inline, { minLength: 1, maxLength: 4 })
  .chain((items) => fc.boolean().map((ordered) => items.map((t, i) => `${ordered ? `${i + 1}.` : '-'} ${t}`).join('\n')));
const keyValues = fc
  .array(fc.tuple(label, measure), { minLength: 1, maxLength: 5 })
  .map((kvs) => kvs.map(([k, v]) => `${k}: ${v}`).join('\n'));
const code = fc.array(inline, { minLength: 1, maxLength: 3 }).map((lines) => `\`\`\`text\n${lines.join('\n')}\n\`\`\``);
const markdown = fc
  .array(fc.oneof(heading, inline, table, list, keyValues, code, fc.constant('> quoted *note* 42')), { minLength: 1, maxLength: 8 })
  .map((blocks) => blocks.join('\n\n'));
const jsonKey = fc.oneof(
  word,
  fc.tuple(word, word).map(([a, b]) => `${a}_${b}`),
  fc.tuple(word, word).map(([a, b]) => `${a}${b.charAt(0).toUpperCase()}${b.slice(1)}`),
);
const jsonScalar = fc.oneof(
  fc.integer({ min: -1000, max: 1_000_000 }),
  fc.double({ min: -1000, max: 1000, noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  word,
  name,
  url,
  fc.constant(null),
);
const flat = fc.dictionary(jsonKey, jsonScalar, { minKeys: 1, maxKeys: 6 });
const jsonDoc = fc.oneof(
  flat,
  fc.array(flat, { minLength: 1, maxLength: 5 }),
  fc.tuple(flat, fc.array(flat, { maxLength: 4 }), flat).map(([a, rows, b]) => ({ ...a, items: rows, details: b })),
);
const text = fc.oneof(
  markdown,
  fc.array(sentence, { minLength: 1, maxLength: 5 }).map((s) => s.join(' ')),
  jsonDoc.map((d) => JSON.stringify(d, null, 2)),
);

const toolResult = fc.oneof(
  fc.array(text, { minLength: 1, maxLength: 3 }).map((texts) => ({ content: texts.map((t) => ({ type: 'text', text: t })) })),
  jsonDoc.map((d) => ({ content: [{ type: 'text', text: JSON.stringify(d) }], structuredContent: Array.isArray(d) ? { items: d } : d })),
);
const resourceResult = fc
  .tuple(text, fc.constantFrom('text/markdown', 'application/json', 'text/plain', undefined))
  .map(([t, mimeType]) => ({ contents: [{ uri: 'demo://r', ...(mimeType ? { mimeType } : {}), text: t }] }));
const promptResult = fc
  .array(text, { minLength: 1, maxLength: 3 })
  .map((texts) => ({ messages: texts.map((t) => ({ role: 'user', content: { type: 'text', text: t } })) }));

const CASES: Array<[string, fc.Arbitrary<McpResult>]> = [
  ['tools/call', toolResult],
  ['resources/read', resourceResult],
  ['prompts/get', promptResult],
];

describe.each(transformers)('transformer $name keeps every fact', (transformer) => {
  const fn = transformer.create(transformer.options.parse(transformer.example));
  it.each(CASES)('on generated %s results', async (method, arb) => {
    await fc.assert(
      fc.asyncProperty(arb, fc.constantFrom(...FEATURES), async (result, tags) => {
        const out = await fn(result, ctxFor(method, tags));
        expect(lostBy(transformer.name, method, tags, result, out)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});

describe('on what real servers answered', () => {
  const recordings = loadRecordings();

  it('has results of every server to check', () => {
    expect(new Set(recordings.map((r) => r.server))).toEqual(
      new Set([
        'server-everything',
        'server-filesystem',
        'server-memory',
        'server-sequential-thinking',
        'demo',
        'fastmcp',
        'python-sdk',
        'git',
      ]),
    );
  });

  it('loses no fact of any recorded result, in any transformer', async () => {
    const lost: string[] = [];
    let checked = 0;
    for (const r of recordings.filter((r) => !r.method.endsWith('/list'))) {
      for (const transformer of transformers) {
        const fn = transformer.create(transformer.options.parse(transformer.example));
        for (const tags of FEATURES) {
          const out = await fn(r.result, ctxFor(r.method, tags, r.name));
          checked++;
          const missing = lostBy(transformer.name, r.method, tags, r.result, out);
          if (missing.length) lost.push(`${r.server} ${r.method} ${r.name} · ${transformer.name} [${tags}]: ${missing.join(', ')}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(500);
    expect(lost).toEqual([]);
  });

  it('keeps compact lists usable: every name, type, enum, required field and constraint, descriptions shortened but never erased', async () => {
    const trim = builtinTransformers().get('trim')!;
    const fn = trim.create(trim.options.parse(undefined));
    for (const r of recordings.filter((r) => r.method.endsWith('/list'))) {
      const out = ((await fn(r.result, ctxFor(r.method, ['verbosity=compact']))) ?? r.result) as Record<
        string,
        Array<Record<string, unknown>>
      >;
      const key = Object.keys(out).find((k) => Array.isArray(out[k]))!;
      const before = r.result[key] as Array<Record<string, unknown>>;
      expect(out[key].map((i) => i.name)).toEqual(before.map((i) => i.name));
      out[key].forEach((item, i) => {
        expect(entryContract(item)).toEqual(entryContract(before[i]));
        const kept = descriptions(item);
        for (const [path, original] of descriptions(before[i])) {
          const now = kept.get(path);
          if (now === undefined && /\/(\$defs|definitions)\//.test(path)) continue; // a definition no $ref reaches
          expect(now, `${r.server} ${item.name} ${path}`).toBeTruthy();
          expect(now!.length).toBeLessThanOrEqual(original.length);
          expect(factsOf(original).size === 0 || factsOf(now!).size > 0).toBe(true);
        }
      });
    }
  });
});

/** Every `description` in an item, by its path. */
function descriptions(value: unknown, path = '', into = new Map<string, string>()): Map<string, string> {
  if (Array.isArray(value)) value.forEach((v, i) => descriptions(v, `${path}/${i}`, into));
  else if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'description' && typeof v === 'string') into.set(path, v);
      else descriptions(v, `${path}/${k}`, into);
    }
  }
  return into;
}
