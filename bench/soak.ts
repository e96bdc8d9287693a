/**
 * Soak: SOAK_SESSIONS (1,000) legacy sessions opened and closed in waves of SOAK_WAVE (50),
 * each making SOAK_CALLS calls, with modern requests in between, through the proxy's HTTP front
 * to a stdio upstream (one process per legacy session, as by default). After every wave, with
 * every session of it closed, it samples the proxy: RSS, heap (after a scrape), open file
 * descriptors, child processes, active handles (from /metrics) and live timers, unref'd ones
 * included (counted inside the proxy by lib/timer-census.mjs). It reports the
 * samples and the slope over the second half of the run (per 1,000 sessions): flat means nothing
 * accumulates per session. Bounded by SOAK_SECONDS (300).
 *
 *   npm run soak                      (builds first)
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { childPids, commandLine, LEAN_MAIN, ROOT, rssKb, startProxy, stopAll } from './lib/procs.js';

const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 1000);
const WAVE = Number(process.env.SOAK_WAVE ?? 50);
const CALLS = Number(process.env.SOAK_CALLS ?? 5);
const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
const MODERN = '2026-07-28';

const timerFile = join(mkdtempSync(join(tmpdir(), 'soak-')), 'timers');
const proxy = await startProxy(commandLine([process.execPath, LEAN_MAIN]), undefined, {
  NODE_OPTIONS: `--import ${join(ROOT, 'bench/lib/timer-census.mjs')}`,
  SOAK_TIMER_FILE: timerFile,
});
const pid = proxy.proc.pid!;
const url = proxy.url;
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; session?: string; body: string }> {
  const res = await request(url, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify(body) });
  const text = await res.body.text();
  const session = res.headers['mcp-session-id'];
  return { status: res.statusCode, session: typeof session === 'string' ? session : undefined, body: text };
}

async function legacySession(n: number): Promise<void> {
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: `soak-${n}`, version: '1' } },
  });
  if (init.status !== 200 || !init.session) throw new Error(`initialize: HTTP ${init.status} ${init.body.slice(0, 200)}`);
  const headers = { 'mcp-session-id': init.session, 'mcp-protocol-version': '2025-11-25' };
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  for (let i = 1; i <= CALLS; i++) {
    const call = await post(
      { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: `s${n} c${i}` } } },
      headers,
    );
    if (!call.body.includes(`s${n} c${i}`)) throw new Error(`call: HTTP ${call.status} ${call.body.slice(0, 200)}`);
  }
  const res = await request(url, { method: 'DELETE', headers });
  await res.body.dump();
}

async function modernCall(n: number): Promise<void> {
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} };
  const res = await post(
    { jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'echo', arguments: { text: `m${n}` }, _meta: meta } },
    { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
  );
  if (!res.body.includes(`m${n}`)) throw new Error(`modern call: HTTP ${res.status} ${res.body.slice(0, 200)}`);
}

function metric(text: string, name: string): number {
  return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} ([\\d.e+]+)`, 'm').exec(text)?.[1] ?? NaN);
}

interface Sample {
  sessions: number;
  rssMb: number;
  heapMb: number;
  fds: number;
  children: number;
  handles: number;
  timers: number;
}

async function sample(sessions: number): Promise<Sample> {
  const res = await request(new URL('/metrics', url), {});
  const text = await res.body.text();
  return {
    sessions,
    rssMb: rssKb(pid) / 1024,
    heapMb: metric(text, 'mcp_proxy_nodejs_heap_size_used_bytes') / 2 ** 20,
    fds: readdirSync(`/proc/${pid}/fd`).length,
    children: childPids(pid).length,
    handles: metric(text, 'mcp_proxy_nodejs_active_handles_total'),
    timers: await liveTimers(),
  };
}

/** The census's next count (written every 200 ms), so it is no older than this sample. */
async function liveTimers(): Promise<number> {
  await new Promise((r) => setTimeout(r, 250));
  return Number(readFileSync(timerFile, 'utf8'));
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

const started = Date.now();
const samples: Sample[] = [];
let done = 0;
let modern = 0;
try {
  samples.push(await sample(0));
  while (done < SESSIONS && Date.now() - started < SECONDS * 1000) {
    const wave = Math.min(WAVE, SESSIONS - done);
    await Promise.all([
      ...Array.from({ length: wave }, (_, i) => legacySession(done + i)),
      ...Array.from({ length: wave }, () => modernCall(++modern)),
    ]);
    done += wave;
    // The upstream processes of closed sessions exit on their own; give them a moment.
    for (let i = 0; i < 50 && childPids(pid).length > 2; i++) await new Promise((r) => setTimeout(r, 100));
    samples.push(await sample(done));
    process.stderr.write(`\r${done} sessions, ${modern} modern calls, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
} finally {
  await stopAll();
}

const half = samples.slice(Math.floor(samples.length / 2));
const per1000 = (key: keyof Sample) =>
  slope(
    half.map((s) => s.sessions),
    half.map((s) => s[key]),
  ) * 1000;
const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : '–');
const first = samples[1] ?? samples[0];
const lastSample = samples.at(-1)!;
const lines = [
  `## Soak: ${done} legacy sessions in waves of ${WAVE} (${CALLS} calls each) and ${modern} modern calls, ${((Date.now() - started) / 1000).toFixed(0)} s`,
  '',
  '| after sessions | RSS MB | heap MB | open fds | child processes | active handles | timers |',
  '|---:|---:|---:|---:|---:|---:|---:|',
  ...samples
    .filter((_, i) => i === 0 || i === 1 || i % Math.max(1, Math.floor(samples.length / 8)) === 0 || i === samples.length - 1)
    .map((s) => `| ${s.sessions} | ${fmt(s.rssMb)} | ${fmt(s.heapMb)} | ${s.fds} | ${s.children} | ${s.handles} | ${s.timers} |`),
  '',
  `Slope over the second half, per 1,000 sessions: RSS ${fmt(per1000('rssMb'), 2)} MB, heap ${fmt(per1000('heapMb'), 2)} MB, fds ${fmt(per1000('fds'), 2)}, children ${fmt(per1000('children'), 2)}, handles ${fmt(per1000('handles'), 2)}, timers ${fmt(per1000('timers'), 2)}.`,
  `From the first wave to the last: RSS ${fmt(first.rssMb)} → ${fmt(lastSample.rssMb)} MB, fds ${first.fds} → ${lastSample.fds}, children ${first.children} → ${lastSample.children}, timers ${first.timers} → ${lastSample.timers}.`,
  '',
];
process.stdout.write('\n\n' + lines.join('\n'));
