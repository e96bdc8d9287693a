/**
 * Fuzzing the parts that take untrusted input in process: JSON-RPC payloads, feature tags,
 * variant hints, pagination cursors, sealed tokens and requestState, YAML configs and every
 * transformer. Oracle: no exception escapes, and bad input gets the documented refusal.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ConfigError, RuleError } from '../../src/jsonrpc/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { parsePayload } from '../../src/jsonrpc/message.js';
import { CursorSigner } from '../../src/extensions/server-variants/cursors.js';
import { parseVariantHints } from '../../src/extensions/server-variants/variants.js';
import { parseFeatures } from '../../src/mcp/features.js';
import { builtinTransformers } from '../../src/transformers/index.js';
import { Sealer } from '../../src/sealing/sealer.js';
import { FEATURE_SETS, serverText } from '../helpers/results.js';
import { fuzzParams } from './settings.js';

const valid = [
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } },
  { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
  { jsonrpc: '2.0', id: 'a', result: { content: [] } },
  { jsonrpc: '2.0', id: 2, error: { code: -1, message: 'no' } },
];
/** A valid message with one member replaced by any JSON value, or removed. */
const mutated = fc
  .tuple(
    fc.constantFrom(...valid),
    fc.constantFrom('jsonrpc', 'id', 'method', 'params', 'result', 'error', 'extra'),
    fc.option(fc.jsonValue(), { nil: undefined }),
  )
  .map(([m, key, value]) => {
    const copy: Record<string, unknown> = { ...m };
    if (value === undefined) delete copy[key];
    else copy[key] = value;
    return JSON.stringify(copy);
  });
const payloads = fc.oneof(
  fc.string(),
  fc.json(),
  mutated,
  fc.array(mutated, { maxLength: 5 }).map((a) => `[${a.join(',')}]`),
);

describe('fuzz: JSON-RPC payloads from clients', () => {
  it('parse or get -32700 / -32600, never throw', () => {
    fc.assert(
      fc.property(payloads, (text) => {
        const out = parsePayload(text, { maxBatch: 3, maxDepth: 64 });
        if (!out.ok) expect([-32700, -32600]).toContain(out.error.error!.code);
        else for (const f of out.frames) expect((f.msg as { jsonrpc: string }).jsonrpc).toBe('2.0');
      }),
      fuzzParams,
    );
  });
});

describe('fuzz: feature tags and variant hints', () => {
  it('parse any value into valid tags and reasons, never throw', () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (tags, hints) => {
        const parsed = parseFeatures(tags, typeof hints === 'object' && hints !== null ? (hints as Record<string, unknown>) : {});
        for (const t of parsed.features.toTags()) expect(t.length).toBeLessThanOrEqual(66);
        const h = parseVariantHints(hints);
        for (const values of Object.values(h.hints)) expect(values.every((v) => typeof v === 'string')).toBe(true);
      }),
      fuzzParams,
    );
  });
});

describe('fuzz: cursors, sealed tokens and requestState', () => {
  const signer = new CursorSigner('fuzz-cursor-secret');
  const sealer = new Sealer(['a-shared-secret-of-enough-length-0001']);
  const cursor = signer.wrap('upstream-cursor-1', 'fast');
  const token = sealer.seal('requestState', { r: 'alpha', u: 'http://x/mcp', p: 'anonymous', i: 1 });
  /** A real token with characters changed, cut or added. */
  const tampered = (real: string) =>
    fc.oneof(
      fc
        .tuple(fc.nat(real.length - 1), fc.string({ minLength: 1, maxLength: 1 }))
        .map(([i, c]) => real.slice(0, i) + c + real.slice(i + 1)),
      fc.nat(real.length).map((n) => real.slice(0, n)),
      fc.string().map((s) => real + s),
      fc.string(),
    );

  it('a forged or altered cursor is refused as tampered, never throws', () => {
    fc.assert(
      fc.property(tampered(cursor), (forged) => {
        const check = signer.unwrap(forged, 'fast');
        if (forged !== cursor) expect(check.ok).toBe(false);
      }),
      fuzzParams,
    );
  });

  it('a forged or altered token opens to nothing, for either purpose, never throws', () => {
    fc.assert(
      fc.property(tampered(token), (forged) => {
        if (forged === token) return;
        expect(sealer.open('requestState', forged)).toBeUndefined();
        expect(sealer.open('session', forged)).toBeUndefined();
      }),
      fuzzParams,
    );
  });
});

describe('fuzz: YAML configs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fuzz-config-'));
  const example = readFileSync(new URL('../../config/default.yaml', import.meta.url), 'utf8');
  const lines = example.split('\n');
  /** The shipped config with a line replaced, a line cut short, or noise inserted. */
  const yaml = fc.oneof(
    fc.string(),
    fc.tuple(fc.nat(lines.length - 1), fc.string()).map(([i, s]) => [...lines.slice(0, i), s, ...lines.slice(i + 1)].join('\n')),
    fc
      .tuple(fc.nat(lines.length - 1), fc.nat(80))
      .map(([i, n]) => [...lines.slice(0, i), lines[i].slice(0, n), ...lines.slice(i + 1)].join('\n')),
    fc
      .tuple(fc.nat(example.length), fc.constantFrom(': ', '- ', '{', '[', '"', "'", '\t', '&a', '*a', '!!binary', '${', '\n  '))
      .map(([i, s]) => example.slice(0, i) + s + example.slice(i)),
  );
  let n = 0;

  it('load or fail with a ConfigError that says where, never anything else', () => {
    fc.assert(
      fc.property(yaml, (text) => {
        const file = join(dir, `c${n++ % 8}.yaml`);
        writeFileSync(file, text);
        try {
          loadConfig({ file, env: {} });
        } catch (err) {
          if (!(err instanceof ConfigError) && !(err instanceof RuleError)) throw err;
          expect((err as ConfigError).problems.length).toBeGreaterThan(0);
        }
      }),
      fuzzParams,
    );
  });
});

describe('fuzz: transformers', () => {
  const log = pino({ level: 'silent' });
  /** What servers write, and fragments of markup joined in any way. */
  const text = fc.oneof(
    serverText,
    fc
      .tuple(
        fc.array(
          fc.constantFrom(
            '# H',
            '## Tips',
            '- item',
            '* x',
            'key: value',
            'Temp: 8°C',
            '| a | b |',
            '|---|---|',
            '```',
            '~~~json',
            '> q',
            '**x**',
            '_y_',
            '`c`',
            '[l](http://x)',
            '<b>',
            '\\*',
            '{"a":[1,2]}',
            ' ',
            '\t',
            '\r',
          ),
          { maxLength: 30 },
        ),
        fc.constantFrom('\n', ' ', ''),
      )
      .map(([parts, separator]) => parts.join(separator)),
  );
  const block = fc.oneof(
    fc.record({ type: fc.constant('text'), text }),
    fc.record({ type: fc.constant('image'), data: fc.base64String(), mimeType: fc.constant('image/png') }),
    fc.anything(),
  );
  const result = fc.oneof(
    fc.record({
      content: fc.array(block, { maxLength: 4 }),
      structuredContent: fc.option(fc.jsonValue(), { nil: undefined }),
      isError: fc.option(fc.boolean(), { nil: undefined }),
    }),
    fc.record({
      contents: fc.array(
        fc.record({ uri: fc.string(), mimeType: fc.constantFrom('text/markdown', 'application/json', 'text/plain', ''), text }),
        { maxLength: 3 },
      ),
    }),
    fc.record({ messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: block }), { maxLength: 3 }) }),
    fc.record({ tools: fc.array(fc.record({ name: fc.string(), description: text, inputSchema: fc.jsonValue() }), { maxLength: 3 }) }),
    fc.dictionary(fc.string(), fc.jsonValue()),
  );
  const methods = ['tools/call', 'resources/read', 'prompts/get', 'tools/list'];
  const tags = FEATURE_SETS;

  for (const t of builtinTransformers().values()) {
    const fn = t.create(t.options.parse(t.example));
    it(`${t.name} never throws on any result`, async () => {
      await fc.assert(
        fc.asyncProperty(result, fc.constantFrom(...methods), fc.constantFrom(...tags), async (r, method, features) => {
          const before = JSON.stringify(r);
          await fn(r, { method, name: 'x', features: parseFeatures(features).features, era: 'legacy', log });
          expect(JSON.stringify(r)).toBe(before); // the input is never modified
        }),
        fuzzParams,
      );
    });
  }
});
