import { describe, expect, it } from 'vitest';
import { testContext } from '../_shared/test-context.js';
import { markdown } from './index.js';

describe('markdown', () => {
  const data = { structuredContent: { city: 'Bern', temp_c: 8 }, content: [{ type: 'text', text: '{"city":"Bern","temp_c":8}' }] };

  it('renders structuredContent and drops it when the tool is known to declare no outputSchema', async () => {
    expect(
      await markdown.create({ title: 'Weather for {{name}}' })(
        data,
        testContext('tools/call', [], { name: 'get_weather', outputSchema: null }),
      ),
    ).toEqual({
      content: [{ type: 'text', text: '## Weather for get_weather\n\n- **City**: Bern\n- **Temp c**: 8' }],
    });
  });

  it('keeps structuredContent when it is not known whether the tool declares an outputSchema (never listed)', async () => {
    const out = await markdown.create({})(data, testContext('tools/call', [], { name: 'get_weather' }));
    expect(out?.structuredContent).toEqual(data.structuredContent);
  });

  it('keeps a valid structuredContent when the tool declares an outputSchema', async () => {
    const out = await markdown.create({})(data, testContext('tools/call', [], { outputSchema: { type: 'object' } }));
    expect(out?.structuredContent).toEqual(data.structuredContent);
  });

  it('fills a template from the data', async () => {
    const out = await markdown.create({ template: '**{{city}}**: {{temp_c}} °C ({{missing}})' })(data, testContext('tools/call'));
    expect(out?.content).toEqual([{ type: 'text', text: '**Bern**: 8 °C ()' }]);
  });

  it('renders JSON resources as text/markdown and leaves prose and errors alone', async () => {
    const out = await markdown.create({})(
      { contents: [{ uri: 'x', mimeType: 'application/json', text: '[{"a":1}]' }] },
      testContext('resources/read'),
    );
    expect(out).toEqual({ contents: [{ uri: 'x', mimeType: 'text/markdown', text: '| A |\n| --- |\n| 1 |' }] });
    expect(await markdown.create({})({ content: [{ type: 'text', text: 'Just prose.' }] }, testContext('tools/call'))).toBeUndefined();
    expect(await markdown.create({})({ ...data, isError: true }, testContext('tools/call'))).toBeUndefined();
  });
});
