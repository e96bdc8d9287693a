import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Transformer } from '../transformers/contract.js';
import { builtinTransformers } from '../transformers/index.js';
import { testContext } from '../transformers/_shared/test-context.js';
import { compileRules, ruleSchema } from './compile.js';
import { DEFAULT_RULES } from './defaults.js';
import { runPipeline } from './run.js';
import { ruleTagWarnings, tagsNotActedOn } from './tags.js';

const defaults = compileRules(DEFAULT_RULES, builtinTransformers());
const JSON_TEXT = '{\n  "name": "Bern",\n  "elevation_m": 540\n}\n';
const MARKDOWN = '# Notes\n\n**bold** and a [link](https://example.org)\n';

describe('exact contents', () => {
  it('a file tool keeps its text for every client; format=json may add structuredContent beside it', async () => {
    const result = { content: [{ type: 'text', text: JSON_TEXT }] };
    for (const tags of [['format=text'], ['format=markdown'], ['verbosity=compact']]) {
      const out = await runPipeline(defaults, result, testContext('tools/call', tags, { name: 'read_text_file' }));
      expect(out.result, tags.join()).toBeUndefined();
      expect(out.verbatim).toContain('file contents');
    }
    const json = await runPipeline(defaults, result, testContext('tools/call', ['format=json'], { name: 'get_file_contents' }));
    expect(json.result).toEqual({ content: [{ type: 'text', text: JSON_TEXT }], structuredContent: { name: 'Bern', elevation_m: 540 } });
  });

  it('gains structuredContent only when its whole text is one JSON document, never from a line of a diff or a file', async () => {
    const diff =
      'diff --git a/status.json b/status.json\n--- a/status.json\n+++ b/status.json\n@@ -1 +1 @@\n-{"status":"draft"}\n+{"status":"final"}\n';
    const source = '// settings\nexport const defaults = {"retries": 3};\n';
    const notes = 'Temperature: 8°C\nHumidity: 72%\n';
    for (const [name, text] of [
      ['git_diff_unstaged', diff],
      ['git_show', diff],
      ['read_text_file', source],
      ['read_file', notes],
    ]) {
      const out = await runPipeline(defaults, { content: [{ type: 'text', text }] }, testContext('tools/call', ['format=json'], { name }));
      expect(out.result, name).toBeUndefined();
    }
  });

  it('a file embedded in a tool result, a file resource and a file in a prompt are exact whatever the tool is called', async () => {
    const embedded = {
      content: [
        { type: 'resource', resource: { uri: 'file:///srv/notes.md', mimeType: 'text/markdown', text: MARKDOWN } },
        { type: 'text', text: MARKDOWN },
      ],
    };
    expect((await runPipeline(defaults, embedded, testContext('tools/call', ['format=text'], { name: 'anything' }))).verbatim).toBe(
      'it holds the contents of file:///srv/notes.md',
    );
    const resource = { contents: [{ uri: 'FILE:///srv/data.json', mimeType: 'application/json', text: JSON_TEXT }] };
    const read = await runPipeline(
      defaults,
      resource,
      testContext('resources/read', ['format=markdown'], { name: 'FILE:///srv/data.json' }),
    );
    expect(read.result).toBeUndefined();
    const prompt = { messages: [{ role: 'user', content: { type: 'resource', resource: { uri: 'file:///a.md', text: MARKDOWN } } }] };
    expect((await runPipeline(defaults, prompt, testContext('prompts/get', ['format=text'], { name: 'p' }))).result).toBeUndefined();
  });

  it('leaves other results to the rules: a JSON resource that is not a file still becomes markdown', async () => {
    const resource = { contents: [{ uri: 'map://features/1', mimeType: 'application/json', text: JSON_TEXT }] };
    const out = await runPipeline(defaults, resource, testContext('resources/read', ['format=markdown'], { name: 'map://features/1' }));
    expect((out.result?.contents as Array<{ mimeType: string }>)[0].mimeType).toBe('text/markdown');
    expect(out.verbatim).toBeUndefined();
  });

  it('your own verbatim rule names your tools; a rule has apply or verbatim, not both', async () => {
    const rules = compileRules(
      [ruleSchema.parse({ when: { name: ['cat_*', 'show'] }, verbatim: true }), ...DEFAULT_RULES],
      builtinTransformers(),
    );
    const out = await runPipeline(
      rules,
      { content: [{ type: 'text', text: MARKDOWN }] },
      testContext('tools/call', ['format=text'], { name: 'cat_file' }),
    );
    expect(out).toMatchObject({ result: undefined, verbatim: 'rule "rule 1" marks it as exact contents' });
    expect(ruleSchema.safeParse({ verbatim: true, apply: [{ markdown: {} }] }).success).toBe(false);
    expect(ruleSchema.safeParse({ when: {} }).success).toBe(false);
  });
});

describe('exact contents and failing or slow steps', () => {
  const failing: Transformer<Record<string, never>> = {
    name: 'explode',
    description: 'test',
    options: z.object({}).default({}),
    create: () => () => {
      throw new Error('boom');
    },
  };
  /** Burns CPU after an await, as a plugin that fetches something first would. */
  const slow: Transformer<Record<string, never>> = {
    name: 'slow',
    description: 'test',
    options: z.object({}).default({}),
    create: () => async (result, ctx) => {
      await Promise.resolve();
      const start = process.cpuUsage();
      while ((process.cpuUsage(start).user + process.cpuUsage(start).system) / 1000 < 30) ctx.budget?.check(1_000_000);
      return { ...result, slow: true };
    },
  };
  const transformers = new Map([...builtinTransformers(), ['explode', failing], ['slow', slow]]);

  it('a step that fails with onError: fail costs the client no file: exact contents pass as they came', async () => {
    const rules = compileRules([ruleSchema.parse({ apply: [{ explode: {} }], onError: 'fail' }), ...DEFAULT_RULES], transformers);
    const file = { content: [{ type: 'text', text: MARKDOWN }] };
    expect(await runPipeline(rules, file, testContext('tools/call', ['format=text'], { name: 'read_text_file' }))).toMatchObject({
      result: undefined,
      verbatim: expect.any(String),
    });
    await expect(runPipeline(rules, file, testContext('tools/call', ['format=text'], { name: 'other' }))).rejects.toThrow('boom');
  });

  it('an asynchronous step is held to the budget after its await too', async () => {
    const rules = compileRules([ruleSchema.parse({ apply: [{ slow: {} }] })], transformers);
    const out = await runPipeline(rules, { content: [] }, testContext('tools/call', []), { maxResultBytes: 1_000_000, timeBudgetMs: 10 });
    expect(out).toMatchObject({ result: undefined, skipped: 'budget' });
  });
});

describe('tags the rules act on', () => {
  it('names the declared tags nothing acts on', () => {
    expect(tagsNotActedOn(defaults, ['agent', 'format=yaml', 'format=json', 'x-house-style', '!interactive'])).toEqual([
      'format=yaml',
      'x-house-style',
      '!interactive',
    ]);
  });

  it('warns about rule tags no client is known to send, with their paths', () => {
    const rules = [{ when: { features: ['format=yml', 'agent', 'x-mine', 'verbosity!=terse', 'colour'] }, apply: [{ markdown: {} }] }].map(
      (r) => ruleSchema.parse(r),
    );
    expect(ruleTagWarnings(rules)).toEqual([
      'contentNegotiation.rules[0].when.features[0]: "yml" is not a registered value of format (json, text, markdown); no client is known to send it',
      'contentNegotiation.rules[0].when.features[3]: "terse" is not a registered value of verbosity (compact, standard, verbose); no client is known to send it',
      expect.stringMatching(/^contentNegotiation.rules\[0\].when.features\[4\]: "colour" is not a registered tag/),
    ]);
  });
});

describe('wrapped results ({"result": <the text>}, as FastMCP and the Python SDK send a str)', () => {
  const wrapper = { type: 'object', properties: { result: { type: 'string' } }, required: ['result'], 'x-fastmcp-wrap-result': true };
  const shown = {
    type: 'object',
    properties: { result: { type: ['string', 'object'] } },
    required: ['result'],
    'x-fastmcp-wrap-result': true,
  };
  const wrap = (text: string) => ({
    _meta: { fastmcp: { wrap_result: true } },
    content: [{ type: 'text', text }],
    structuredContent: { result: text },
    isError: false,
  });
  const run = (result: Record<string, unknown>, tags: string[], name = 'tool', outputSchema: Record<string, unknown> | null = shown) =>
    runPipeline(defaults, result, testContext('tools/call', tags, { name, outputSchema }));

  it('are shaped as their text, and structuredContent says what the shaped text says', async () => {
    const guide = 'Getting started.\n\nExample: deploy --env staging\n\nNote: approvals needed.';
    const compact = (await run(wrap(guide), ['verbosity=compact'])).result!;
    expect(compact).toEqual({ ...wrap('Getting started.\n\nNote: approvals needed.') });
    const table = JSON.stringify([
      { name: 'Bern', m: 540 },
      { name: 'Lugano', m: 273 },
      { name: 'Zermatt', m: 1608 },
    ]);
    const toon = (await run(wrap(table), ['verbosity=compact'])).result!;
    expect((toon.content as Array<{ text: string }>)[0].text).toMatch(/^\[3\]\{name,m\}:/);
    expect(toon.structuredContent).toEqual({ result: (toon.content as Array<{ text: string }>)[0].text });
    const text = (await run(wrap('## Hi\n\n**bold**'), ['format=text'])).result!;
    expect(text).toEqual(wrap('Hi\n\nbold'));
  });

  it('format=json puts the data under result in place of the text, where the schema shown allows it', async () => {
    const data = { city: 'Bern', temperature_c: 8 };
    const out = (await run(wrap(JSON.stringify(data, null, 2)), ['format=json'])).result!;
    expect(out).toEqual({
      _meta: { fastmcp: { wrap_result: true } },
      content: [{ type: 'text', text: JSON.stringify(data) }],
      structuredContent: { result: data },
      isError: false,
    });
    // Shown the upstream's wrapper (a rule without tools/list), the client gets its text as it was.
    expect((await run(wrap(JSON.stringify(data)), ['format=json'], 'tool', wrapper)).result).toBeUndefined();
  });

  it('as exact contents keep their text; only a whole JSON document may become data', async () => {
    const file = '{\n  "status": "final"\n}\n';
    expect((await run(wrap(file), ['format=json'], 'read_text_file')).result).toEqual({
      ...wrap(file),
      structuredContent: { result: { status: 'final' } },
    });
    const diff = 'diff --git a/s.json b/s.json\n--- a/s.json\n+++ b/s.json\n@@ -1 +1 @@\n-{"status":"draft"}\n+{"status":"final"}\n';
    for (const tags of [['format=json'], ['format=text'], ['verbosity=compact'], ['format=markdown']]) {
      expect((await run(wrap(diff), tags, 'git_diff_unstaged')).result, tags.join()).toBeUndefined();
      expect((await run(wrap(file), tags, 'read_text_file')).result?.content ?? wrap(file).content, tags.join()).toEqual(
        wrap(file).content,
      );
    }
  });

  it('pass unchanged when what the steps made cannot be wrapped, or would not satisfy the schema', async () => {
    const twoTexts = {
      content: [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'a' },
      ],
      structuredContent: { result: 'a' },
    };
    expect((await run(twoTexts, ['format=text'])).result).toBeUndefined(); // not a wrapped text: it has structuredContent of its own
    const strict = { type: 'object', properties: { result: { type: 'string', maxLength: 12 } }, required: ['result'] };
    expect((await run(wrap('**a b c d e f**'), ['format=text'], 'tool', strict)).result).toEqual(wrap('a b c d e f'));
    expect((await run(wrap('# Long heading here'), ['format=text'], 'tool', strict)).result).toBeUndefined();
  });
});
