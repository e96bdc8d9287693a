/**
 * What hostile or large upstream results cost the proxy, in this process:
 * 1. the worst adversarial input (test/safety/adversarial.ts) per built-in transformer at 64 KB
 *    and 1 MB, in ms and in plain copies of the same result (a JSON round trip, same run), with
 *    no time budget: the transformers' own cost;
 * 2. the longest the event loop is blocked while 1 MB results are shaped through a session
 *    (the filter chain's shape, default rules), with the default limits and without any, measured with
 *    perf_hooks.monitorEventLoopDelay: the limits keep it near the time budget.
 *
 *   node --import tsx bench/shaping.ts        (npm run bench runs it after the others)
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setImmediate as tick } from 'node:timers/promises';
import pino from 'pino';
import { configSchema } from '../src/config/schema.js';
import { Metrics } from '../src/ops/metrics.js';
import { builtinChain } from '../src/core/filters.js';
import { VariantCatalog } from '../src/extensions/server-variants/scope.js';
import { serverVariantsSchema } from '../src/extensions/server-variants/variants.js';
import { DEFAULT_RULES } from '../src/rules/defaults.js';
import { builtinTransformers } from '../src/transformers/index.js';
import { compileRules } from '../src/rules/compile.js';
import type { PipelineLimits } from '../src/rules/run.js';
import { ADVERSARIAL, adversarialCosts, best, type Cost } from '../test/safety/adversarial.js';
import { smoke } from './lib/settings.js';

const log = pino({ level: 'silent' });
const DEFAULT_LIMITS = configSchema.parse({}).contentNegotiation.limits;
/** The worst adversarial input per transformer and method at each size. */
function adversarialTable(): string[] {
  const lines = ['| transformer | method | size | worst input | ms | plain copies |', '|---|---|---:|---|---:|---:|'];
  for (const size of smoke([64 * 1024, 1024 * 1024], [4 * 1024])) {
    const worst = new Map<string, Cost>();
    for (const c of adversarialCosts(size)) {
      const key = `${c.transformer} | ${c.method}`;
      if (c.copies > (worst.get(key)?.copies ?? -1)) worst.set(key, c);
    }
    for (const [key, c] of worst) lines.push(`| ${key} | ${size / 1024} KB | ${c.input} | ${c.ms.toFixed(1)} | ${c.copies.toFixed(0)} |`);
  }
  return lines;
}

const MB = smoke(1, 1 / 64);
const MEGABYTE: Record<string, [string[], string]> = {
  'prose → format=json': [
    ['agent', 'format=json'],
    '## Stations\n\n' + Array.from({ length: 40_000 * MB }, (_, i) => `Station ${i}: ${(i * 7) % 31}°C`).join('\n'),
  ],
  'JSON → format=markdown': [
    ['human', 'format=markdown'],
    JSON.stringify(
      Array.from({ length: 15_000 * MB }, (_, i) => ({ station: `S${i}`, temperature_c: (i * 7) % 31, wind: 'NW', dry: i % 2 === 0 })),
    ),
  ],
  'markdown → format=text': [
    ['format=text'],
    Array.from({ length: 25_000 * MB }, (_, i) =>
      i % 10 === 0 ? `## Section ${i}` : `- **Item ${i}**: [linked](http://x.test/${i})`,
    ).join('\n'),
  ],
  'adversarial → format=text': [['format=text'], ADVERSARIAL['code spans'](1_000_000 * MB)],
  'adversarial → format=json': [['agent', 'format=json'], ADVERSARIAL['key-value lines'](1_000_000 * MB)],
};

async function blocked(tags: string[], text: string, limits: PipelineLimits | undefined): Promise<{ maxMs: number; outcome: string }> {
  const rules = compileRules(DEFAULT_RULES, builtinTransformers());
  const { counters } = new Metrics({ sessions: () => 0, upstreamProcesses: () => 0 });
  const n = builtinChain({ rules, variants: new VariantCatalog(serverVariantsSchema.parse({})), limits, counters }).forSession(log);
  n.onInitialize({ capabilities: { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features: tags } } } });
  const result = { content: [{ type: 'text', text }] };
  let shaped = false;
  await n.shape('tools/call', 'x', result); // warm-up
  counters.resultsUnshaped.size = counters.resultsUnshaped.budget = 0;
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  for (let i = 0; i < 5; i++) {
    await tick();
    shaped = (await n.shape('tools/call', 'x', result)) !== undefined;
    await tick();
  }
  histogram.disable();
  const { size, budget } = counters.resultsUnshaped;
  const outcome = shaped
    ? 'shaped'
    : size
      ? 'relayed unchanged: too large'
      : budget
        ? 'relayed unchanged: over budget'
        : 'nothing to change';
  return { maxMs: histogram.max / 1e6, outcome };
}

async function eventLoopTable(): Promise<string[]> {
  const lines = [
    '| 1 MB result | plain copy ms | default limits: longest block ms | outcome | no limits: longest block ms | outcome |',
    '|---|---:|---:|---|---:|---|',
  ];
  for (const [kind, [tags, text]] of Object.entries(MEGABYTE)) {
    const copy = best(5, () => JSON.parse(JSON.stringify({ content: [{ type: 'text', text }] })));
    const limited = await blocked(tags, text, DEFAULT_LIMITS);
    const unlimited = await blocked(tags, text, undefined);
    lines.push(
      `| ${kind} (${(text.length / 1e6).toFixed(2)} MB) | ${copy.toFixed(1)} | **${limited.maxMs.toFixed(0)}** | ${limited.outcome} | ${unlimited.maxMs.toFixed(0)} | ${unlimited.outcome} |`,
    );
  }
  return lines;
}

const report = [
  '## 6. Hostile and large results (in process)',
  '',
  `Worst adversarial input per transformer, no time budget (test/safety/adversarial.ts; "plain copies" = the cost of a JSON round trip of the same result, measured in the same run):`,
  '',
  ...adversarialTable(),
  '',
  `Event-loop delay while 1 MB results are shaped (5 results each, monitorEventLoopDelay), with the default limits (timeBudgetMs ${DEFAULT_LIMITS.timeBudgetMs}, maxResultBytes ${DEFAULT_LIMITS.maxResultBytes}) and with none:`,
  '',
  ...(await eventLoopTable()),
].join('\n');
process.stdout.write(`\n${report}\n`);
if (!existsSync('.bench')) mkdirSync('.bench');
appendFileSync('.bench/report.md', `\n${report}\n`);
