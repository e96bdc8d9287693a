/**
 * Properties every built-in transformer keeps, on arbitrary results (fast-check): it never
 * throws, it never drops a block it does not own (images, audio, links, embedded resources,
 * blobs), and what it returns is still valid against the 2025-11-25 protocol schema.
 */
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { protocolCheck } from '../../test/helpers/protocol-schema.js';
import { parseFeatures } from '../mcp/features.js';
import { builtinTransformers } from './index.js';
import type { McpResult, TransformContext } from './contract.js';
import { FEATURE_SETS, serverText } from '../../test/helpers/results.js';

const validate = protocolCheck;

const log = pino({ level: 'silent' });
const audienceArb = fc.option(fc.record({ audience: fc.subarray(['user', 'assistant'] as const, { minLength: 1 }) }), { nil: undefined });
const textArb = serverText;
const textBlock = fc.record({ type: fc.constant('text'), text: textArb, annotations: audienceArb }, { requiredKeys: ['type', 'text'] });
const otherBlock = fc.oneof(
  fc.record({ type: fc.constant('image'), data: fc.base64String(), mimeType: fc.constant('image/png') }),
  fc.record({ type: fc.constant('resource_link'), uri: fc.constant('demo://x'), name: fc.string({ minLength: 1 }) }),
  fc.record({ type: fc.constant('resource'), resource: fc.record({ uri: fc.constant('demo://y'), text: fc.string() }) }),
);
const toolResult = fc.record(
  {
    content: fc.array(fc.oneof(textBlock, otherBlock), { maxLength: 5 }),
    isError: fc.boolean(),
    structuredContent: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue()),
  },
  { requiredKeys: ['content'] },
);
const resourceResult = fc.record({
  contents: fc.array(
    fc.oneof(
      fc.record({
        uri: fc.constant('demo://r'),
        mimeType: fc.constantFrom('text/markdown', 'application/json', 'text/plain'),
        text: textArb,
      }),
      fc.record({ uri: fc.constant('demo://b'), mimeType: fc.constant('application/octet-stream'), blob: fc.base64String() }),
    ),
    { maxLength: 3 },
  ),
});
const promptResult = fc.record({
  messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.oneof(textBlock, otherBlock) }), { maxLength: 4 }),
});
const toolsList = fc.record({
  tools: fc.array(
    fc.record({
      name: fc.string({ minLength: 1, maxLength: 10 }),
      description: textArb,
      inputSchema: fc.constant({ type: 'object', properties: { a: { type: 'string', description: 'An a. More.' } } }),
    }),
    { maxLength: 4 },
  ),
});

const CASES: Array<[string, string, fc.Arbitrary<McpResult>]> = [
  ['tools/call', 'CallToolResult', toolResult],
  ['resources/read', 'ReadResourceResult', resourceResult],
  ['prompts/get', 'GetPromptResult', promptResult],
  ['tools/list', 'ListToolsResult', toolsList],
];
const FEATURES = FEATURE_SETS;

/** Blocks a transformer does not own: everything but text (audience may drop blocks for the other audience). */
const foreignBlocks = (r: McpResult) =>
  JSON.stringify(
    [...((r.content as unknown[]) ?? []), ...((r.messages as Array<{ content: unknown }>) ?? []).map((m) => m.content)].filter(
      (b) => (b as { type?: string }).type !== 'text',
    ),
  );
const binaries = (r: McpResult) => JSON.stringify(((r.contents as Array<{ blob?: string }>) ?? []).filter((c) => c.blob !== undefined));

describe.each([...builtinTransformers().values()])('transformer $name', (transformer) => {
  const fn = transformer.create(transformer.options.parse(transformer.example));
  it.each(CASES)('on %s: never throws, keeps foreign blocks and blobs, stays schema-valid', async (method, def, arb) => {
    await fc.assert(
      fc.asyncProperty(arb, fc.constantFrom(...FEATURES), async (result, tags) => {
        const ctx: TransformContext = { method, name: 'x', features: parseFeatures(tags).features, era: 'legacy', log };
        const before = JSON.stringify(result);
        const out = await fn(result, ctx);
        expect(JSON.stringify(result)).toBe(before); // the input is never mutated
        if (out === undefined) return;
        expect(validate(def, out)).toBe(true);
        if (transformer.name !== 'audience') expect(foreignBlocks(out)).toBe(foreignBlocks(result));
        expect(binaries(out)).toBe(binaries(result));
      }),
      { numRuns: 150 },
    );
  });
});
