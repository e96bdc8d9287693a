import { describe, expect, it } from 'vitest';
import { testContext } from '../test-context.js';
import { dropNamedSections, firstSentence, trim } from './index.js';

const defaults = trim.options.parse(undefined);

describe('trim', () => {
  it('drops named sections with their subsections, up to the next heading of the same level', () => {
    const text = '# Guide\nIntro\n## Examples\nex\n### More\nmore\n## Usage\nuse';
    expect(dropNamedSections(text, new Set(['examples']))).toBe('# Guide\nIntro\n## Usage\nuse');
  });

  it('collapses whitespace and caps the length with a marker', async () => {
    const out = await trim.create({ ...defaults, maxLength: 10 })({ content: [{ type: 'text', text: 'abc   \n\n\n\n0123456789xyz' }] }, testContext('tools/call'));
    expect(out).toEqual({ content: [{ type: 'text', text: 'abc\n\n01234… [truncated 8 characters]' }] });
  });

  it('shortens list descriptions to one sentence and drops schema property descriptions', async () => {
    const out = await trim.create(defaults)(
      { tools: [{ name: 't', description: 'Gets it. Then more words.', inputSchema: { type: 'object', properties: { a: { type: 'string', description: 'x' } } } }] },
      testContext('tools/list'),
    );
    expect(out).toEqual({ tools: [{ name: 't', description: 'Gets it.', inputSchema: { type: 'object', properties: { a: { type: 'string' } } } }] });
  });

  it('finds the first sentence', () => {
    expect([firstSentence('One. Two.'), firstSentence('No stop'), firstSentence('v1.2 is out! Yes.')]).toEqual(['One.', 'No stop', 'v1.2 is out!']);
  });
});
