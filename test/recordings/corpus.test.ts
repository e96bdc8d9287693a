/**
 * The corpus: what real servers answered (this folder, `npm run record`: server-everything,
 * -filesystem, -memory, -sequential-thinking, the demo, a FastMCP 4 server, a Python SDK server
 * and server-git's tools over a real repository), shaped as the proxy shapes them: through the
 * rules, with the outputSchema the client is shown, by every built-in transformer alone (beside
 * the built-in exact-contents rule) and by the built-in rules, for every tag set. Each shaped
 * result must
 * - keep every fact (number, name, URL, key) of what it was, but what compact drops on purpose;
 * - satisfy the outputSchema the client is shown, and keep structuredContent where one is shown;
 * - say the same in structuredContent as in its text when shaping made or changed it (a wrapped
 *   text: `{"result": <its one text>}`, or data that a text block decodes to: JSON or TOON);
 * - leave a diff byte for byte, structuredContent included;
 * - keep the leading whitespace of indented lines (format=text and compact);
 * - hold records as arrays, never as numbered keys (`commit`, `commit_2`).
 */
import { decode } from '@toon-format/toon';
import { Ajv } from 'ajv';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { shownSchemas } from '../../src/extensions/content-negotiation/shown-schemas.js';
import { parseFeatures } from '../../src/mcp/features.js';
import { compileRules, type CompiledRule, type RuleConfig } from '../../src/rules/compile.js';
import { DEFAULT_RULES } from '../../src/rules/defaults.js';
import { runPipeline } from '../../src/rules/run.js';
import { contentOf, isTextBlock, type McpResult } from '../../src/transformers/contract.js';
import { isUnifiedDiff } from '../../src/transformers/_shared/unified-diff.js';
import { missingFacts } from '../../src/transformers/_shared/facts.js';
import { isPlainObject, parseJsonDocument } from '../../src/transformers/_shared/json.js';
import { isWrappedText } from '../../src/transformers/_shared/wrapped-text.js';
import { dropNamedSections } from '../../src/transformers/trim/prose.js';
import { builtinTransformers } from '../../src/transformers/index.js';
import { payload } from '../helpers/payload.js';
import { loadRecordings } from './record.js';

const log = pino({ level: 'silent' });
const transformers = builtinTransformers();
const recordings = loadRecordings();
const TAG_SETS = [
  ['format=json'],
  ['agent', 'format=json'],
  ['format=markdown'],
  ['human', 'format=markdown'],
  ['format=text'],
  ['verbosity=compact'],
  ['agent', 'format=json', 'verbosity=compact'],
  ['human', 'format=markdown', 'verbosity=compact'],
  ['format=text', 'verbosity=compact'],
  ['agent'],
  ['human'],
];
const COMPACT_DROPS = new Set(['examples', 'example', 'tips', 'tip', 'see also']);

/** Each built-in transformer alone on every method (beside the built-in exact-contents rule), and the built-in rules. */
const RULE_SETS: Array<[string, CompiledRule[]]> = [
  ['built-in rules', compileRules(DEFAULT_RULES, transformers)],
  ...[...transformers.values()].map((t): [string, CompiledRule[]] => {
    const alone: RuleConfig = { name: t.name, when: { features: [] }, apply: [{ [t.name]: t.example ?? {} }], onError: 'pass' };
    return [t.name, compileRules([DEFAULT_RULES[0], alone], transformers)];
  }),
];

/** Each server's tools and the outputSchema it declares (null: none), from its recorded tools/list. */
const declaredSchemas = new Map<string, Map<string, Record<string, unknown> | null>>();
for (const r of recordings.filter((r) => r.method === 'tools/list')) {
  const tools = r.result.tools as Array<{ name: string; outputSchema?: Record<string, unknown> }>;
  declaredSchemas.set(r.server, new Map(tools.map((t) => [t.name, t.outputSchema ?? null])));
}

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false });
const texts = (r: McpResult) => (contentOf(r) ?? []).filter(isTextBlock).map((b) => b.text);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A text read as data: JSON, else TOON; undefined when it is neither. */
function decoded(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    try {
      return decode(text);
    } catch {
      return undefined;
    }
  }
}

/** Whether structuredContent says what the text says. */
function agrees(data: unknown, result: McpResult, wrapped: boolean): boolean {
  const value = wrapped && isPlainObject(data) ? data.result : data;
  const all = texts(result);
  if (typeof value === 'string') return all.length === 1 && all[0] === value;
  const inner = isPlainObject(value) && Object.keys(value).length === 1 && Array.isArray(value.items) ? value.items : undefined;
  return all.some((t) => {
    const d = decoded(t);
    return same(d, value) || (inner !== undefined && same(d, inner));
  });
}

/** Keys of the data written as numbered repeats of another key (`commit` and `commit_2`). */
function numberedKeys(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => numberedKeys(v, found));
  else if (isPlainObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      const m = /^([a-z][a-z0-9_]*?)_(\d{1,3})$/.exec(key);
      if (m && Number(m[2]) >= 2 && m[1] in value) found.push(key);
      numberedKeys(v, found);
    }
  }
  return found;
}

/** Indented lines as their leading whitespace and first character, where that character is no markup a transformer may rewrite. */
function indented(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => /^[ \t]+[^\s*+\-#>|[`_<\\~!]/.test(l))
    .map((l) => l.slice(0, l.length - l.trimStart().length + 1));
}

describe('the recorded corpus, shaped as the proxy shapes it', () => {
  it('has the servers available here, and none it cannot run', () => {
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
    expect(recordings.filter((r) => r.method === 'tools/call' && isWrappedText(r.result)).length).toBeGreaterThanOrEqual(9);
    expect(recordings.filter((r) => texts(r.result).some((t) => isUnifiedDiff(t))).length).toBeGreaterThanOrEqual(4);
  });

  it.each(RULE_SETS)(
    '%s: facts kept, data agreeing with text and satisfying the schema shown, diffs and indentation kept, no numbered keys',
    async (_name, rules) => {
      const shown = shownSchemas(rules);
      const problems: string[] = [];
      let checked = 0;
      for (const r of recordings.filter((r) => !r.method.endsWith('/list'))) {
        for (const tags of TAG_SETS) {
          const ctx = { method: r.method, name: r.name, features: parseFeatures(tags).features, era: 'legacy' as const, log };
          const declared = r.method === 'tools/call' && r.name ? declaredSchemas.get(r.server)?.get(r.name) : undefined;
          const outputSchema = declared === undefined ? undefined : await shown(r.name!, declared, ctx);
          const out = await runPipeline(rules, r.result, { ...ctx, outputSchema });
          const shaped = out.result ?? r.result;
          const where = `${r.server} ${r.name} [${tags}]`;
          checked++;

          const compact = tags.includes('verbosity=compact') || _name === 'trim';
          const dropped = (v: unknown) => (typeof v === 'string' ? dropNamedSections(v.split('\n'), COMPACT_DROPS).join('\n') : v);
          const before = compact
            ? payload(r.result).map((v) => (isPlainObject(v) && isWrappedText(r.result) ? { result: dropped(v.result) } : dropped(v)))
            : payload(r.result);
          const lost = missingFacts(before, payload(shaped));
          if (lost.length) problems.push(`${where}: lost ${lost.join(', ')}`);

          if (r.method !== 'tools/call' || out.result === undefined) continue;
          const data = shaped.structuredContent;
          if (outputSchema && r.result.structuredContent !== undefined && data === undefined)
            problems.push(`${where}: structuredContent dropped under an outputSchema`);
          if (outputSchema && data !== undefined && !ajv.validate(outputSchema, data))
            problems.push(`${where}: structuredContent does not satisfy the schema shown: ${ajv.errorsText()}`);
          const wrapped = isWrappedText(r.result);
          if (data !== undefined && (wrapped || !same(data, r.result.structuredContent)) && !agrees(data, shaped, wrapped))
            problems.push(`${where}: structuredContent disagrees with the text`);
          if (
            texts(r.result).some((t) => isUnifiedDiff(t)) &&
            !(same(shaped.content, r.result.content) && same(data, r.result.structuredContent))
          )
            problems.push(`${where}: a diff was changed`);
          if (!tags.includes('format=json') && _name !== 'json-extract' && _name !== 'pattern-extract') {
            const lines = new Set(texts(shaped).flatMap((t) => t.split('\n')));
            const kept = (prefix: string) => [...lines].some((l) => l.startsWith(prefix));
            const prose = texts(r.result).filter((t) => parseJsonDocument(t) === undefined); // JSON's whitespace is no meaning: it may be minified
            for (const prefix of prose.flatMap((t) => indented(compact ? dropNamedSections(t.split('\n'), COMPACT_DROPS).join('\n') : t))) {
              if (!kept(prefix)) problems.push(`${where}: lost the indentation of ${JSON.stringify(prefix)}`);
            }
          }
          if (data !== undefined && !same(data, r.result.structuredContent)) {
            const numbered = numberedKeys(data);
            if (numbered.length) problems.push(`${where}: numbered keys ${numbered.join(', ')}`);
          }
        }
      }
      expect(checked).toBeGreaterThan(400);
      expect(problems).toEqual([]);
    },
  );
});
