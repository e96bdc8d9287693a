import { describe, expect, it } from 'vitest';
import { testContext } from '../_shared/test-context.js';
import { trim } from './index.js';
import { shorten } from './lists.js';
import { dropNamedSections } from './prose.js';

const defaults = trim.options.parse(undefined);
const fn = trim.create(defaults);
const text = (out: unknown) => (out as { content: Array<{ text: string }> }).content[0].text;

describe('trim', () => {
  it('drops named sections with their subsections, up to the next heading of the same level', () => {
    const lines = '# Guide\nIntro\n## Examples\nex\n### More\nmore\n## Usage\nuse'.split('\n');
    expect(dropNamedSections(lines, new Set(['examples'])).join('\n')).toBe('# Guide\nIntro\n## Usage\nuse');
  });

  it('never drops the section a document opens with, nor everything', async () => {
    const notes = '# Notes\n\nMeeting with Ada on 4 March.\n\n## Tips\n\nBook early.';
    expect(
      text(
        await trim.create({ ...defaults, dropSections: ['Notes', 'Tips'] })(
          { content: [{ type: 'text', text: notes }] },
          testContext('tools/call'),
        ),
      ),
    ).toBe('# Notes\n\nMeeting with Ada on 4 March.');
    expect(await fn({ content: [{ type: 'text', text: '## Tips\n\nBook early.' }] }, testContext('tools/call'))).toBeUndefined();
    const onlyTips = '## Overview\n\n## Tips\n\nBook early.';
    expect(await fn({ content: [{ type: 'text', text: onlyTips }] }, testContext('tools/call'))).toBeUndefined();
    expect(text(await fn({ content: [{ type: 'text', text: 'Intro.\n\n## Tips\n\nBook early.' }] }, testContext('tools/call')))).toBe(
      'Intro.',
    );
  });

  it('drops paragraphs that open with Example: or Tip:, up to the next blank line or a fact of their own', () => {
    const guide =
      'Getting started.\n\nRun `deploy` to deploy.\n\nExample: deploy --env staging\n\n**Tip:** pass --dry-run\nto see the changes.\n\nNote: production needs approval.';
    expect(dropNamedSections(guide.split('\n'), new Set(['example', 'tip'])).join('\n')).toBe(
      'Getting started.\n\nRun `deploy` to deploy.\n\n\n\nNote: production needs approval.',
    );
    const examples = 'Intro.\n\nExamples:\n```sh\ndeploy --env x\n```\n- deploy --tag v1\n  name: a\nOwner: Ada\n\nEnd.';
    expect(dropNamedSections(examples.split('\n'), new Set(['examples'])).join('\n')).toBe('Intro.\n\nOwner: Ada\n\nEnd.');
    const kept = 'Tip: the opening paragraph stays\n\nName: foo\nTip: a fact inside a paragraph stays'.split('\n');
    expect(dropNamedSections(kept, new Set(['tip']))).toEqual(kept);
  });

  it('leaves a unified diff whole, trailing spaces and blank lines included', async () => {
    const diff = 'diff --git a/a.md b/a.md\n--- a/a.md\n+++ b/a.md\n@@ -1,4 +1,4 @@\n ## Tips   \n \n \n-old\n+new\n';
    expect(await fn({ content: [{ type: 'text', text: diff }] }, testContext('tools/call'))).toBeUndefined();
  });

  it('keeps fenced code whole, even when it holds a line that looks like a heading', async () => {
    const md = 'Run it:\n\n```sh\n# Examples\nnpm test\n```\n\n## Examples\n\nx';
    expect(text(await fn({ content: [{ type: 'text', text: md }] }, testContext('tools/call')))).toBe(
      'Run it:\n\n```sh\n# Examples\nnpm test\n```',
    );
  });

  it('removes trailing spaces and blank runs, and caps only when asked', async () => {
    expect(text(await fn({ content: [{ type: 'text', text: 'abc   \n\n\n\nxyz' }] }, testContext('tools/call')))).toBe('abc\n\nxyz');
    const capped = await trim.create({ ...defaults, maxLength: 10 })(
      { content: [{ type: 'text', text: 'abc\n\n0123456789xyz' }] },
      testContext('tools/call'),
    );
    expect(text(capped)).toBe('abc\n\n01234… [truncated 8 characters]');
  });

  it('minifies JSON text, and beside structuredContent changes text only losslessly', async () => {
    expect(text(await fn({ content: [{ type: 'text', text: '{\n  "a": 1\n}' }] }, testContext('tools/call')))).toBe('{"a":1}');
    const file = '# Notes\n\nAll of it.\n\n## Examples\n\nkept';
    expect(
      await fn({ content: [{ type: 'text', text: file }], structuredContent: { content: file } }, testContext('tools/call')),
    ).toBeUndefined();
  });

  it('leaves data resources whole: JSON minified, code and CSV untouched, markdown compacted', async () => {
    const out = await fn(
      {
        contents: [
          { uri: 'a', mimeType: 'application/json', text: '[\n  1,\n  2\n]' },
          { uri: 'b', mimeType: 'text/x-python', text: 'def f():\n\n\n\n    return 1   ' },
          { uri: 'c', mimeType: 'text/csv', text: 'a,b\n\n\n\n1,2' },
          { uri: 'd', mimeType: 'text/markdown', text: '# Doc\n\nBody.\n\n## Tips\n\nx' },
        ],
      },
      testContext('resources/read'),
    );
    expect(out?.contents).toEqual([
      { uri: 'a', mimeType: 'application/json', text: '[1,2]' },
      { uri: 'b', mimeType: 'text/x-python', text: 'def f():\n\n\n\n    return 1   ' },
      { uri: 'c', mimeType: 'text/csv', text: 'a,b\n\n\n\n1,2' },
      { uri: 'd', mimeType: 'text/markdown', text: '# Doc\n\nBody.' },
    ]);
  });

  it('keeps the first sentences of list descriptions and parameter descriptions, and every type, enum and required field', async () => {
    const long = `Thinks step by step. ${'It revises earlier thoughts when needed. '.repeat(20)}`;
    const tool = {
      name: 't',
      description: long,
      inputSchema: {
        type: 'object',
        properties: {
          mode: { type: 'string', enum: ['a', 'b'], description: `Which mode, e.g. a. ${'More detail. '.repeat(20)}` },
          n: { type: 'integer', minimum: 1, description: 'How many.' },
        },
        required: ['mode'],
      },
    };
    const out = (await fn({ tools: [tool] }, testContext('tools/list'))) as { tools: Array<typeof tool> };
    const [t] = out.tools;
    expect(t.description).toBe('Thinks step by step. It revises earlier thoughts when needed.');
    expect(t.inputSchema.properties.mode).toEqual({ type: 'string', enum: ['a', 'b'], description: 'Which mode, e.g. a.' });
    expect(t.inputSchema.properties.n).toEqual(tool.inputSchema.properties.n);
    expect(t.inputSchema.required).toEqual(['mode']);
    const one = (await trim.create({ ...defaults, sentences: 1, descriptionLength: 40 })({ tools: [tool] }, testContext('tools/list'))) as {
      tools: Array<typeof tool>;
    };
    expect(one.tools[0].description).toBe('Thinks step by step.');
    expect(
      await fn(
        { tools: [{ name: 'x', description: 'Gets it. Then more words.', inputSchema: { type: 'object' } }] },
        testContext('tools/list'),
      ),
    ).toBeUndefined();
  });

  it('keeps the opening paragraph, without sentences the list repeats', async () => {
    const tools = ['alpha', 'beta', 'gamma'].map((name) => ({
      name,
      description: `Does ${name}. Only works within allowed directories.\nError Responses:\n400: Bad request`,
      inputSchema: { type: 'object' },
    }));
    tools.push({ name: 'd', description: 'Only works within allowed directories.\n\nLong notes.', inputSchema: { type: 'object' } });
    const out = (await fn({ tools }, testContext('tools/list'))) as { tools: Array<{ description: string }> };
    expect(out.tools.map((t) => t.description)).toEqual([
      'Does alpha.',
      'Does beta.',
      'Does gamma.',
      'Only works within allowed directories.',
    ]);
  });

  it('drops schema annotations and unreached definitions, keeping every constraint', async () => {
    const inputSchema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      title: 'Input',
      properties: {
        title: { type: 'string', title: 'Title', minLength: 1, pattern: '^[a-z]+$', examples: ['abc'], $comment: 'x' },
        parent: { $ref: '#/$defs/parent' },
        tags: { type: 'array', items: { type: 'string', format: 'uuid' }, maxItems: 3, default: [] },
        mode: { anyOf: [{ const: 'fast' }, { enum: ['slow', 'steady'] }], default: 'a long default text that explains far too much' },
        extra: { type: 'object', additionalProperties: true },
      },
      required: ['title'],
      additionalProperties: false,
      $defs: { parent: { oneOf: [{ $ref: '#/$defs/page' }] }, page: { type: 'object', required: ['id'] }, unused: { type: 'string' } },
    };
    const out = (await fn(
      { tools: [{ name: 'x', description: 'X.', inputSchema, annotations: { readOnlyHint: false, destructiveHint: false } }] },
      testContext('tools/list'),
    )) as { tools: Array<Record<string, unknown>> };
    expect(out.tools[0]).toEqual({
      name: 'x',
      description: 'X.',
      inputSchema: {
        type: 'object',
        properties: {
          title: { type: 'string', minLength: 1, pattern: '^[a-z]+$' },
          parent: { $ref: '#/$defs/parent' },
          tags: { type: 'array', items: { type: 'string', format: 'uuid' }, maxItems: 3, default: [] },
          mode: { anyOf: [{ const: 'fast' }, { enum: ['slow', 'steady'] }] },
          extra: { type: 'object' },
        },
        required: ['title'],
        additionalProperties: false,
        $defs: { parent: { oneOf: [{ $ref: '#/$defs/page' }] }, page: { type: 'object', required: ['id'] } },
      },
      annotations: { destructiveHint: false },
    });
    // A $ref it cannot follow, or a keyword that moves where refs point: every definition stays.
    for (const ref of ['#/$defs/parent/oneOf/0', 'other.json#/$defs/page']) {
      const kept = (await fn(
        { tools: [{ name: 'x', inputSchema: { ...inputSchema, properties: { p: { $ref: ref } } } }] },
        testContext('tools/list'),
      )) as { tools: Array<{ inputSchema: { $defs: object } }> };
      expect(Object.keys(kept.tools[0].inputSchema.$defs)).toEqual(['parent', 'page', 'unused']);
    }
    // A draft-07 schema whose $ref has a neighbour reads differently under 2020-12: its $schema stays.
    const refWithSibling = { ...inputSchema, properties: { p: { $ref: '#/$defs/page', minProperties: 1 } } };
    const kept = (await fn({ tools: [{ name: 'x', inputSchema: refWithSibling }] }, testContext('tools/list'))) as {
      tools: Array<{ inputSchema: { $schema?: string } }>;
    };
    expect(kept.tools[0].inputSchema.$schema).toBe(inputSchema.$schema);
    // A draft-07 schema with a keyword only later dialects apply: dropping its $schema would make it stricter.
    const newer = { ...inputSchema, dependentRequired: { title: ['tags'] } };
    const keptNewer = (await fn({ tools: [{ name: 'x', inputSchema: newer }] }, testContext('tools/list'))) as {
      tools: Array<{ inputSchema: { $schema?: string } }>;
    };
    expect(keptNewer.tools[0].inputSchema.$schema).toBe(inputSchema.$schema);
  });

  it('keeps additionalProperties: true where unevaluatedProperties reads it', async () => {
    const inputSchema = {
      type: 'object',
      allOf: [{ properties: { a: { type: 'string' } }, additionalProperties: true }],
      unevaluatedProperties: false,
    };
    const out = (await fn({ tools: [{ name: 'x', description: 'X.', inputSchema }] }, testContext('tools/list'))) as
      { tools: Array<{ inputSchema: unknown }> } | undefined;
    expect(out?.tools[0].inputSchema ?? inputSchema).toEqual(inputSchema);
  });

  it("keeps an upstream's __proto__ keys as keys, in schemas and property names", async () => {
    const inputSchema = JSON.parse('{"type":"object","__proto__":{"x":1},"properties":{"__proto__":{"type":"string","title":"T"}}}');
    const out = (await fn({ tools: [{ name: 'x', inputSchema }] }, testContext('tools/list'))) as { tools: unknown[] };
    expect(JSON.stringify(out.tools[0])).toBe(
      '{"name":"x","inputSchema":{"type":"object","__proto__":{"x":1},"properties":{"__proto__":{"type":"string"}}}}',
    );
  });

  it('shortens at a sentence end when one is near, else at a word', () => {
    expect(shorten('One two. Three four five six seven.', 30)).toBe('One two. Three four five six …');
    expect(shorten('Alpha beta. Gamma delta epsilon.', 20)).toBe('Alpha beta. …');
    expect(shorten('  spaced\n\nout  ', 40)).toBe('spaced out');
  });
});
