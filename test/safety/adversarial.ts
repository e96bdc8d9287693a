/**
 * Texts built to make a careless markdown or JSON scanner backtrack or rescan: long runs of
 * one character, unclosed constructs, deep nesting, many tiny lines; and the measurement of
 * every built-in transformer on them against a plain copy of the same result (a JSON round
 * trip, in the same run, best of three each). Used by the linear-time test and by
 * `npm run bench` (bench/shaping.ts).
 */
import pino from 'pino';
import { parseFeatures } from '../../src/mcp/features.js';
import { builtinTransformers } from '../../src/transformers/index.js';
import type { McpResult } from '../../src/transformers/contract.js';

const fill = (unit: string, n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
export const ADVERSARIAL: Record<string, (n: number) => string> = {
  'heading then spaces': (n) => `# a${' '.repeat(n)}x`,
  'spaces then a letter': (n) => `${' '.repeat(n)}x`,
  'spaces on every line': (n) => fill(`${' '.repeat(1000)}x\n`, n),
  backticks: (n) => '`'.repeat(n),
  'an unclosed fence': (n) => '```' + 'a'.repeat(n),
  'fence lines': (n) => fill('```\n', n),
  'code spans': (n) => fill('`a` ``b`` ', n),
  pipes: (n) => '|'.repeat(n),
  'pipes and spaces': (n) => fill('| ', n),
  'table rules': (n) => fill('|---', n),
  'a long table': (n) => '| a | b |\n|---|---|\n' + fill('| 1 | 2 |\n', n),
  hashes: (n) => '#'.repeat(n),
  'hashes and spaces': (n) => fill('# ', n),
  'heading lines': (n) => fill('## Examples\n', n),
  dashes: (n) => '-'.repeat(n),
  'nested brackets': (n) => '['.repeat(n / 2) + ']'.repeat(n / 2),
  'open brackets': (n) => '['.repeat(n),
  'unclosed links': (n) => fill('[a](', n),
  'nested braces': (n) => '{"a":'.repeat(n / 5),
  'open braces': (n) => '{'.repeat(n),
  asterisks: (n) => '*'.repeat(n),
  'emphasis openers': (n) => fill('**a', n),
  'alternating emphasis': (n) => fill('*a', n),
  underscores: (n) => `${'_'.repeat(n)}a`,
  'angle brackets': (n) => '<'.repeat(n),
  'angle brackets and spaces': (n) => fill('< ', n),
  'key-value lines': (n) => fill('Key: 12 km/h\n', n),
  colons: (n) => fill('a: ', n),
  'blank lines': (n) => '\n'.repeat(n),
  'deep blockquotes': (n) => fill(`${'> '.repeat(20)}x\n`, n),
  'list items': (n) => fill('- item *x*\n', n),
  prose: (n) => fill('It is 8°C in Bern with 72% humidity, see https://example.org/x. ', n),
  'a unified diff': (n) => '--- a/x\n+++ b/x\n@@ -1 +1 @@\n' + fill('-{"a":1}\n+- item\n \n', n),
  'hunk headers only': (n) => fill('@@ -1 +1 @@\n--- \n', n),
  'repeated records': (n) => fill("Commit: 'abc'\nAuthor: Ada\n\n", n),
  'records out of step': (n) => 'a: 1\nb: 2\n' + fill('a: 1\n', n),
  'label lines': (n) => fill('Commit history:\n', n),
  'tip paragraphs': (n) => fill('\nTip: x\nKey: 1\n', n),
  'JSON objects in prose': (n) => fill('{"a":1} ', n),
  'a JSON document': (n) => JSON.stringify(Array.from({ length: Math.floor(n / 40) }, (_, i) => ({ id: i, name: `n${i}`, v: i * 1.5 }))),
};

export function resultFor(method: string, text: string): McpResult {
  switch (method) {
    case 'resources/read':
      return { contents: [{ uri: 'demo://x', mimeType: 'text/markdown', text }] };
    case 'tools/list':
      return {
        tools: [
          { name: 'x', description: text, inputSchema: { type: 'object', properties: { a: { type: 'string', description: text } } } },
        ],
      };
    default:
      return { content: [{ type: 'text', text }] };
  }
}

/** Each built-in transformer with a method it shapes and tags that make it act. */
export const CASES: Array<[transformer: string, method: string, tags: string[]]> = [
  ['json-extract', 'tools/call', ['format=json']],
  ['json-extract', 'resources/read', ['format=json']],
  ['markdown', 'tools/call', ['format=markdown']],
  ['markdown', 'resources/read', ['format=markdown']],
  ['plain-text', 'tools/call', ['format=text']],
  ['trim', 'tools/call', ['verbosity=compact']],
  ['trim', 'resources/read', ['verbosity=compact']],
  ['trim', 'tools/list', ['verbosity=compact']],
  ['tabular', 'tools/call', ['verbosity=compact']],
  ['audience', 'tools/call', ['agent']],
  ['pattern-extract', 'tools/call', ['format=json']],
];

export interface Cost {
  transformer: string;
  method: string;
  input: string;
  ms: number;
  /** `ms` in plain copies of the same result. */
  copies: number;
}

/**
 * The cost of every case on every adversarial input of `size` characters, with no time budget.
 * With `enough`, a case stops being measured again once one run costs at most that many copies
 * (more runs only matter for a case that looks too slow, which a preempted run can make it).
 */
export function adversarialCosts(size: number, enough = 0): Cost[] {
  const transformers = builtinTransformers();
  const log = pino({ level: 'silent' });
  return CASES.flatMap(([name, method, tags]) => {
    const t = transformers.get(name)!;
    const fn = t.create(t.options.parse(t.example));
    const ctx = { method, name: 'x', features: parseFeatures(tags).features, era: 'legacy' as const, log };
    return Object.entries(ADVERSARIAL).map(([input, make]) => {
      const result = resultFor(method, make(size));
      const copy = best(3, () => JSON.parse(JSON.stringify(result)));
      const ms = best(5, () => fn(result, ctx), enough * Math.max(copy, 0.05)); // the longer a run, the likelier a busy machine preempts it: more tries
      return { transformer: name, method, input, ms, copies: ms / Math.max(copy, 0.05) };
    });
  });
}

/** The least CPU time (ms) of `runs` runs, or of those until one takes at most `enoughMs`: CPU time, so other processes on a busy machine do not count. */
export function best(runs: number, fn: () => unknown, enoughMs = 0): number {
  let ms = Infinity;
  for (let i = 0; i < runs && ms > enoughMs; i++) {
    const start = process.cpuUsage();
    fn();
    const used = process.cpuUsage(start);
    ms = Math.min(ms, (used.user + used.system) / 1000);
  }
  return ms;
}
