/**
 * Every built-in transformer runs in time linear in its input, whatever the upstream sends.
 * Each one gets adversarial texts (long runs of spaces, backticks, pipes, `#`, dashes, brackets,
 * emphasis markers, unclosed constructs, deep nesting) at 64 KB and 1 MB, with no time budget,
 * and its cost is compared with a plain copy of the same result (a JSON round trip, measured
 * in the same run). A backtracking pattern or a rescan per line costs thousands of copies at
 * these sizes; a linear scan costs a few dozen at most. Best of three runs each, so a busy
 * machine slows both sides alike.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseFeatures } from '../../src/negotiation/features.js';
import { builtinTransformers } from '../../src/pipeline/registry.js';
import type { McpResult, TransformContext } from '../../src/pipeline/types.js';

/** The most a transformer may cost, in plain copies of the same result. */
const MAX_COPIES = 150;
const SIZES = [64 * 1024, 1024 * 1024];

const fill = (unit: string, n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
const INPUTS: Record<string, (n: number) => string> = {
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
  'colons': (n) => fill('a: ', n),
  'blank lines': (n) => '\n'.repeat(n),
  'deep blockquotes': (n) => fill(`${'> '.repeat(20)}x\n`, n),
  'list items': (n) => fill('- item *x*\n', n),
  prose: (n) => fill('It is 8°C in Bern with 72% humidity, see https://example.org/x. ', n),
  'a JSON document': (n) => JSON.stringify(Array.from({ length: Math.floor(n / 40) }, (_, i) => ({ id: i, name: `n${i}`, v: i * 1.5 }))),
};

function resultFor(method: string, text: string): McpResult {
  switch (method) {
    case 'resources/read':
      return { contents: [{ uri: 'demo://x', mimeType: 'text/markdown', text }] };
    case 'tools/list':
      return { tools: [{ name: 'x', description: text, inputSchema: { type: 'object', properties: { a: { type: 'string', description: text } } } }] };
    default:
      return { content: [{ type: 'text', text }] };
  }
}

const CASES: Array<[transformer: string, method: string, tags: string[]]> = [
  ['json-extract', 'tools/call', ['format=json']],
  ['json-extract', 'resources/read', ['format=json']],
  ['markdown', 'tools/call', ['format=markdown']],
  ['markdown', 'resources/read', ['format=markdown']],
  ['plain-text', 'tools/call', ['format=text']],
  ['trim', 'tools/call', ['verbosity=compact']],
  ['trim', 'resources/read', ['verbosity=compact']],
  ['trim', 'tools/list', ['verbosity=compact']],
  ['audience', 'tools/call', ['agent']],
];

function best(runs: number, fn: () => unknown): number {
  let ms = Infinity;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    ms = Math.min(ms, performance.now() - start);
  }
  return ms;
}

describe('transformers on adversarial input', () => {
  const transformers = builtinTransformers();
  const log = pino({ level: 'silent' });

  it.each(SIZES)('cost at most %i-character inputs a bounded number of plain copies', async (size) => {
    const offenders: string[] = [];
    let worst = { ratio: 0, label: '' };
    for (const [name, method, tags] of CASES) {
      const t = transformers.get(name)!;
      const fn = t.create(t.options.parse(undefined));
      const ctx: TransformContext = { method, name: 'x', features: parseFeatures(tags).features, era: 'legacy', log };
      for (const [label, make] of Object.entries(INPUTS)) {
        const result = resultFor(method, make(size));
        const copy = best(3, () => JSON.parse(JSON.stringify(result)));
        const ms = best(3, () => fn(result, ctx));
        const ratio = ms / Math.max(copy, 0.05);
        if (ratio > worst.ratio) worst = { ratio, label: `${name} ${method} "${label}"` };
        if (ratio > MAX_COPIES) offenders.push(`${name} on ${method} "${label}": ${ms.toFixed(1)} ms, ${ratio.toFixed(0)} copies`);
      }
    }
    console.log(`${size} characters: worst ${worst.label} at ${worst.ratio.toFixed(1)} plain copies`);
    expect(offenders).toEqual([]);
  }, 300_000);
});
