import { describe, expect, it } from 'vitest';
import { testContext } from '../_shared/test-context.js';
import { jsonExtract } from './index.js';

const prose = {
  content: [
    { type: 'text', text: 'Temperature: 8\nHumidity: 72' },
    { type: 'image', data: 'AA==', mimeType: 'image/png' },
  ],
};

describe('json-extract', () => {
  it('puts the data in structuredContent, keeps a JSON text copy and foreign blocks', async () => {
    const out = await jsonExtract.create({ keepText: true })(prose, testContext('tools/call'));
    expect(out).toEqual({
      content: [
        { type: 'text', text: '{"temperature":8,"humidity":72}' },
        { type: 'image', data: 'AA==', mimeType: 'image/png' },
      ],
      structuredContent: { temperature: 8, humidity: 72 },
    });
  });

  it('can empty the text as the SEP examples do, and wraps arrays', async () => {
    const out = await jsonExtract.create({ keepText: false })({ content: [{ type: 'text', text: '[1,2]' }] }, testContext('tools/call'));
    expect(out).toEqual({ content: [], structuredContent: { items: [1, 2] } });
  });

  it("keeps the original when the data does not fit the tool's outputSchema", async () => {
    const outputSchema = { type: 'object', required: ['temperature'], properties: { temperature: { type: 'string' } } };
    expect(await jsonExtract.create({ keepText: true })(prose, testContext('tools/call', [], { outputSchema }))).toBeUndefined();
    const fits = { type: 'object', properties: { temperature: { type: 'number' } } };
    expect(await jsonExtract.create({ keepText: true })(prose, testContext('tools/call', [], { outputSchema: fits }))).toHaveProperty(
      'structuredContent.temperature',
      8,
    );
  });

  it('leaves errors, existing structuredContent and plain prose alone', async () => {
    const fn = jsonExtract.create({ keepText: true });
    expect(await fn({ ...prose, isError: true }, testContext('tools/call'))).toBeUndefined();
    expect(await fn({ ...prose, structuredContent: { a: 1 } }, testContext('tools/call'))).toBeUndefined();
    expect(await fn({ content: [{ type: 'text', text: 'Nothing structured here.' }] }, testContext('tools/call'))).toBeUndefined();
  });

  it('labels JSON resources as application/json and never touches blobs or prose documents', async () => {
    const out = await jsonExtract.create({ keepText: true })(
      {
        contents: [
          { uri: 'a', mimeType: 'text/plain', text: ' {"a":1} ' },
          { uri: 'b', blob: 'AA==' },
          { uri: 'c', text: '# Guide\n\nSee {"x":1}.' },
        ],
      },
      testContext('resources/read'),
    );
    expect(out).toEqual({
      contents: [
        { uri: 'a', mimeType: 'application/json', text: '{"a":1}' },
        { uri: 'b', blob: 'AA==' },
        { uri: 'c', text: '# Guide\n\nSee {"x":1}.' },
      ],
    });
  });
});

describe('json-extract in tools/list', () => {
  it("shows a wrapped text's schema (FastMCP, the Python SDK) with room for the data read from it, and leaves other schemas alone", async () => {
    const fastmcp = { type: 'object', properties: { result: { type: 'string' } }, required: ['result'], 'x-fastmcp-wrap-result': true };
    const sdk = { type: 'object', properties: { result: { title: 'Result', type: 'string' } }, required: ['result'], title: 'echoOutput' };
    const other = { type: 'object', properties: { result: { type: 'string' }, count: { type: 'number' } }, required: ['result'] };
    const list = {
      tools: [
        { name: 'a', inputSchema: { type: 'object' }, outputSchema: fastmcp },
        { name: 'b', inputSchema: { type: 'object' }, outputSchema: sdk },
        { name: 'c', inputSchema: { type: 'object' }, outputSchema: other },
        { name: 'd', inputSchema: { type: 'object' } },
      ],
    };
    const out = (await jsonExtract.create({ keepText: true })(list, testContext('tools/list'))) as typeof list;
    expect(out.tools.map((t) => t.outputSchema)).toEqual([
      { ...fastmcp, properties: { result: { type: ['string', 'object'] } } },
      { ...sdk, properties: { result: { title: 'Result', type: ['string', 'object'] } } },
      other,
      undefined,
    ]);
    expect(await jsonExtract.create({ keepText: true })({ tools: [list.tools[2]] }, testContext('tools/list'))).toBeUndefined();
  });
});
