/**
 * What the hardening limits cost per request, in this process, against the plain work of the
 * same request measured in the same run: the nesting-depth scan of a client body against
 * JSON.parse of it, and the per-request bookkeeping (in-flight count, failed-authentication
 * window, pool key from the known capability flags) against JSON.parse of a typical request.
 * CPU time from process.cpuUsage(); bounded by a call count and a time cap per case.
 *
 *   node --import tsx bench/limits.ts        (npm run bench runs it with the others)
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { ClientLimits, FailureCounter } from '../src/fronts/http/limits.js';
import { canonicalJson } from '../src/jsonrpc/canonical.js';
import { nestsDeeperThan, parsePayload } from '../src/jsonrpc/message.js';
import { upstreamCapabilities } from '../src/upstream/pool.js';
import { smoke } from './lib/settings.js';

const LIMITS = { maxBatch: 100, maxDepth: 64 };

/** CPU µs per call of `fn`, after a warm-up, bounded by a call count and a time cap. */
function cpuPerCall(fn: () => unknown, maxCalls: number): { us: number; calls: number } {
  for (let i = 0; i < 200; i++) fn();
  const start = process.cpuUsage();
  const wall = Date.now();
  let calls = 0;
  while (calls < maxCalls && Date.now() - wall < smoke(1500, 20)) {
    for (let i = 0; i < 100; i++) fn();
    calls += 100;
  }
  const used = process.cpuUsage(start);
  return { us: (used.user + used.system) / calls, calls };
}

/** A tools/call body of about `bytes`, arguments nested a few levels as real ones are. */
function toolCall(bytes: number): string {
  const rows: unknown[] = [];
  const body = (r: unknown[]) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'write_file', arguments: { path: '/tmp/x', rows: r }, _meta: { progressToken: 7 } },
    });
  for (let i = 0; body(rows).length < bytes; i++)
    rows.push({ id: i, name: `row ${i}`, tags: ['a', 'b'], note: 'text with "quotes" and \\ backslashes' });
  return body(rows);
}

const maxCallsFor = (text: string) => Math.max(200, Math.floor((300 * 1024 * 1024) / text.length));
const lines = [
  '## Hardening limits: cost per request (in process)',
  '',
  'The nesting-depth check (listen.maxJsonDepth) walks every parsed client body before anything else sees it;',
  'its cost is shown against JSON.parse of the same body in the same run. The per-request bookkeeping runs once per',
  'POST (in-flight count), per authenticated request (failed-attempt window) and per modern request that',
  'needs a pooled session (pool key from the known capability flags).',
  '',
  '| client body | size | depth check µs | JSON.parse µs | **check / parse** | parsePayload with limits µs |',
  '|---|---:|---:|---:|---:|---:|',
];
for (const size of smoke([300, 4 * 1024, 64 * 1024, 1024 * 1024], [300])) {
  const text = toolCall(size);
  const n = maxCallsFor(text);
  const value = JSON.parse(text);
  const scan = cpuPerCall(() => nestsDeeperThan(value, 64), n);
  const parse = cpuPerCall(() => JSON.parse(text), n);
  const full = cpuPerCall(() => parsePayload(text, LIMITS), n);
  const kb = text.length / 1024;
  lines.push(
    `| tools/call | ${kb >= 1024 ? (kb / 1024).toFixed(1) + ' MB' : kb.toFixed(1) + ' KB'} | ${scan.us.toFixed(2)} | ${parse.us.toFixed(2)} | **${(scan.us / parse.us).toFixed(2)}×** | ${full.us.toFixed(2)} |`,
  );
}
const deep = '['.repeat(100_000) + ']'.repeat(100_000);
const refused = cpuPerCall(() => parsePayload(deep, LIMITS), 2000);
lines.push(`| 100,000 nested arrays (refused) | ${(deep.length / 1024).toFixed(0)} KB | — | — | — | ${refused.us.toFixed(2)} |`);

const typical = toolCall(300);
const parseTypical = cpuPerCall(() => JSON.parse(typical), 1_000_000).us;
const inFlight = new ClientLimits({ requestsPerSecond: 100, sessions: 32, inFlight: 64 });
const failures = new FailureCounter(20);
const caps = {
  sampling: { context: {} },
  elicitation: { form: {} },
  roots: { listChanged: true },
  extensions: { x: { features: ['agent'] } },
};
const steps: Array<[string, () => unknown]> = [
  ['in-flight count (begin + release)', () => inFlight.begin('token:alice')?.()],
  ['failed-authentication window (check)', () => failures.blockedFor('203.0.113.9')],
  ['pool key (known capability flags + canonical JSON)', () => canonicalJson(upstreamCapabilities(caps))],
];
lines.push('', '| per-request step | µs | **share of JSON.parse of a 300 B request** |', '|---|---:|---:|');
for (const [what, fn] of steps) {
  const { us } = cpuPerCall(fn, 1_000_000);
  lines.push(`| ${what} | ${us.toFixed(3)} | **${((us / parseTypical) * 100).toFixed(0)} %** |`);
}
lines.push(`| (JSON.parse of the 300 B request) | ${parseTypical.toFixed(3)} | 100 % |`);

const report = lines.join('\n') + '\n';
process.stdout.write('\n' + report);
if (!existsSync('.bench')) mkdirSync('.bench');
appendFileSync('.bench/report.md', '\n' + report);
