/**
 * `npm run bench` (part): what several servers behind one endpoint cost per call, next to one
 * server. The same `tools/call echo` goes, HTTP front → lean stdio servers, through
 *
 *   (a) the proxy with one unnamed `--upstream` (the single-server path: the byte-exact relay),
 *   (b) the proxy with one named server (`--upstream a=…`: the endpoint of several servers, with one),
 *   (c) the proxy with three named servers (`--upstream a=… --upstream b=… --upstream c=…`), every
 *       call to one of them (`a_echo`), and calls spread over the three in turn,
 *
 * and through the bare node:http relay (bench/bare-relay.mjs, the floor), from a legacy client (a
 * session: initialize, then its calls; raw HTTP as bench/eras.ts sends) and from a 2026-07-28
 * client (stateless requests with `_meta` and the Mcp-Method/Mcp-Name headers). Batches of each
 * (client, route) alternate, 4 calls in flight, on warm connections and sessions, each round
 * starting at another one; the figure is the process in the middle's own CPU time per call: its
 * threads' time on a CPU from /proc/<pid>/task/<tid>/schedstat (children excluded), in ns where
 * utime+stime counts 10 ms ticks, so batches can be short and rounds many. Ratios to (a) are
 * taken per round (the batches of a round see the same machine) and given as the median and
 * range over the rounds.
 *
 * Knobs (env): BENCH_SEVERAL_CALLS (calls per batch, default 500), BENCH_SEVERAL_ROUNDS
 * (default 20), BENCH_SEVERAL_IN_FLIGHT (default 4), BENCH_SEVERAL_ONLY (routes beside the floor
 * and (a), e.g. `c3`), BENCH_SEVERAL_ERAS (`legacy,modern`), BENCH_PROFILE_DIR (every proxy under
 * --cpu-prof, profiles written there), BENCH_BEFORE (another build's dist/main.js: its
 * single-server path measured too, in the same batches).
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { LEAN_MAIN, commandLine, cpuNs, startPeer, startProxyWith, stopAll, killAllNow, type Running } from './lib/procs.js';
import { int, smoke } from './lib/settings.js';

const CALLS = int('BENCH_SEVERAL_CALLS', smoke(500, 20), 10, 1_000_000);
const ROUNDS = int('BENCH_SEVERAL_ROUNDS', smoke(20, 1), 1, 1000);
const WARMUP = smoke(2500, 20);
/** Time cap of one batch (its calls stop there, the batch says so). */
const BATCH_MS = 20_000;
const IN_FLIGHT = int('BENCH_SEVERAL_IN_FLIGHT', 4, 1, 64);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR || undefined;
const BEFORE = process.env.BENCH_BEFORE || undefined;
const V = '2026-07-28';
const LEAN = commandLine([process.execPath, LEAN_MAIN]);
const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: IN_FLIGHT * 2 });

process.on('exit', killAllNow);

type Era = 'legacy' | 'modern';
/** One call: sends it and checks its answer. */
type Send = (id: number) => Promise<void>;

interface Route {
  key: string;
  label: string;
  gateway: string;
  /** The tool name of each call (by its number). */
  tool: (i: number) => string;
}

const one = (name: string) => () => name;
const SPREAD = ['a_echo', 'b_echo', 'c_echo'];
const ALL_ROUTES: Route[] = [
  { key: 'bare', label: 'bare node:http relay (the floor)', gateway: 'bare', tool: one('echo') },
  { key: 'a', label: '(a) one unnamed `--upstream` (single-server path)', gateway: 'single', tool: one('echo') },
  ...(BEFORE ? [{ key: 'a-before', label: '(a) in the build before (BENCH_BEFORE)', gateway: 'before', tool: one('echo') }] : []),
  { key: 'b', label: '(b) one named server, `--upstream a=…`', gateway: 'named', tool: one('a_echo') },
  { key: 'c1', label: '(c) three named servers, every call to `a`', gateway: 'three', tool: one('a_echo') },
  { key: 'c3', label: '(c) three named servers, calls spread over a, b, c', gateway: 'three', tool: (i) => SPREAD[i % 3] },
];
/** BENCH_SEVERAL_ONLY (e.g. `c3`, to profile one route): those routes, beside the floor and (a). */
const ONLY = (process.env.BENCH_SEVERAL_ONLY ?? '').split(',').filter(Boolean);
const ROUTES = ALL_ROUTES.filter((r) => ONLY.length === 0 || ['bare', 'a', ...ONLY].includes(r.key));
const ERAS = (process.env.BENCH_SEVERAL_ERAS ?? 'legacy,modern').split(',') as Era[];
for (const era of ERAS)
  if (era !== 'legacy' && era !== 'modern') throw new Error(`BENCH_SEVERAL_ERAS: "${String(era)}" is neither legacy nor modern`);
for (const key of ONLY)
  if (!ALL_ROUTES.some((r) => r.key === key))
    throw new Error(`BENCH_SEVERAL_ONLY: no route "${key}" (${ALL_ROUTES.map((r) => r.key).join(', ')})`);

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ text: string; headers: Record<string, unknown> }> {
  const res = await request(url, {
    method: 'POST',
    dispatcher,
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });
  const text = await res.body.text();
  if (res.statusCode !== 200 && res.statusCode !== 202) throw new Error(`HTTP ${res.statusCode} from ${url}: ${text.slice(0, 300)}`);
  return { text, headers: res.headers };
}

/** Throws unless the answer (JSON or the last SSE event) is a result that echoes `expected`. */
function check(text: string, expected: string): void {
  const json = text.startsWith('{')
    ? text
    : (
        text
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .at(-1) ?? ''
      ).slice(6);
  const msg = JSON.parse(json) as { result?: { content?: Array<{ text?: string }>; isError?: boolean }; error?: unknown };
  if (msg.error || msg.result?.isError || msg.result?.content?.[0]?.text !== expected)
    throw new Error(`echo failed: ${text.slice(0, 300)}`);
}

async function legacySession(url: string): Promise<Record<string, string>> {
  const init = await post(
    url,
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    },
    {},
  );
  const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

const modernMeta = {
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};

async function sender(url: string, era: Era, route: Route): Promise<Send> {
  if (era === 'legacy') {
    const headers = await legacySession(url);
    return async (id) => {
      const text = `hello ${id}`;
      const params = { name: route.tool(id), arguments: { text } };
      check((await post(url, { jsonrpc: '2.0', id, method: 'tools/call', params }, headers)).text, text);
    };
  }
  return async (id) => {
    const text = `hello ${id}`;
    const name = route.tool(id);
    const headers = { 'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': name };
    const params = { name, arguments: { text }, _meta: modernMeta };
    check((await post(url, { jsonrpc: '2.0', id, method: 'tools/call', params }, headers)).text, text);
  };
}

interface Batch {
  calls: number;
  /** The gateway's CPU time over the batch, ns. */
  ns: number;
  capped: boolean;
}

/** One batch: `calls` sends, IN_FLIGHT at a time (stopped at BATCH_MS), and the CPU time `pid` used meanwhile. */
async function batch(pid: number, send: Send, calls: number, ids: { next: number }): Promise<Batch> {
  const ns0 = cpuNs(pid);
  const deadline = performance.now() + BATCH_MS;
  let issued = 0;
  let capped = false;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < calls) {
        if (performance.now() > deadline) return void (capped = true);
        issued++;
        await send(ids.next++);
      }
    }),
  );
  return { calls: issued, ns: cpuNs(pid) - ns0, capped };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const range = (xs: number[], digits: number, unit = '') =>
  xs.length > 1 ? `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}${unit}` : '–';

async function startGateways(): Promise<Record<string, Running>> {
  const named = (names: string[]) => names.flatMap((n) => ['--upstream', `${n}=${LEAN}`]);
  const starts: Record<string, () => Promise<Running>> = {
    bare: () => startPeer('bare-relay', [process.execPath, LEAN_MAIN]),
    single: () => startProxyWith(['--upstream', LEAN], PROFILE_DIR),
    before: () => startProxyWith(['--upstream', LEAN], PROFILE_DIR, {}, BEFORE),
    named: () => startProxyWith(named(['a']), PROFILE_DIR),
    three: () => startProxyWith(named(['a', 'b', 'c']), PROFILE_DIR),
  };
  const started: Record<string, Running> = {};
  for (const gateway of new Set(ROUTES.map((r) => r.gateway))) started[gateway] = await starts[gateway]();
  return started;
}

function loadavg(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

async function main(): Promise<string[]> {
  const loadBefore = loadavg();
  const gateways = await startGateways();
  const eras = ERAS;
  const kinds = eras.flatMap((era) => ROUTES.map((route) => ({ era, route })));
  const sends = new Map<(typeof kinds)[number], Send>();
  for (const k of kinds) sends.set(k, await sender(gateways[k.route.gateway].url, k.era, k.route));
  const ids = { next: 1 };
  const pidOf = (k: (typeof kinds)[number]) => gateways[k.route.gateway].pid;
  // Warm-up: V8 optimises the hot paths after ~2000 calls; every server process of each route started.
  for (const k of kinds) await batch(pidOf(k), sends.get(k)!, WARMUP, ids);
  const per = new Map(kinds.map((k) => [k, [] as Batch[]]));
  for (let r = 0; r < ROUNDS; r++) {
    // Each round starts at another kind, so none always follows the same one.
    for (let j = 0; j < kinds.length; j++) {
      const k = kinds[(r + j) % kinds.length];
      per.get(k)!.push(await batch(pidOf(k), sends.get(k)!, CALLS, ids));
    }
    process.stderr.write(`[several] round ${r + 1}/${ROUNDS}\n`);
  }
  const loadAfter = loadavg();
  const ms = (b: Batch) => b.ns / 1e6 / b.calls;
  const lines = [
    '## Several servers behind one endpoint',
    '',
    `HTTP front → lean stdio servers (bench/lean-server.mjs), tools/call echo, ${IN_FLIGHT} in flight; ${ROUNDS} rounds of alternating batches ` +
      `of ${CALLS} calls each; load average ${loadBefore} before, ${loadAfter} after.`,
    "CPU = the gateway process's threads' time on a CPU (schedstat; children excluded), per call: median of the rounds (range).",
    '× (a) and × bare: ratios of batches in the same round, median (range).',
    '',
  ];
  for (const era of eras) {
    const of = (key: string) => per.get(kinds.find((k) => k.era === era && k.route.key === key)!)!;
    const ratios = (key: string, to: string) => of(key).map((b, i) => ms(b) / ms(of(to)[i]));
    lines.push(
      `| ${era === 'legacy' ? 'legacy client (a session, 2025-11-25)' : '2026-07-28 client (stateless)'} | calls | gateway CPU per call | × (a) | × bare relay |`,
      '|---|---:|---:|---:|---:|',
    );
    for (const route of ROUTES) {
      const batches = of(route.key);
      const calls = batches.reduce((n, b) => n + b.calls, 0);
      const capped = batches.some((b) => b.capped) ? ' (time cap)' : '';
      const cpu = batches.map(ms);
      const toA = route.key === 'bare' ? '–' : `${median(ratios(route.key, 'a')).toFixed(2)}× (${range(ratios(route.key, 'a'), 2, '×')})`;
      const toBare =
        route.key === 'bare' ? '1.00×' : `${median(ratios(route.key, 'bare')).toFixed(2)}× (${range(ratios(route.key, 'bare'), 2, '×')})`;
      const verdict = route.key.startsWith('c') ? ` ${median(ratios(route.key, 'a')) <= 1.1 ? 'PASS' : 'FAIL'} (target ≤ 1.10×)` : '';
      lines.push(`| ${route.label} | ${calls}${capped} | ${median(cpu).toFixed(3)} ms (${range(cpu, 3)}) | ${toA}${verdict} | ${toBare} |`);
    }
    lines.push('');
  }
  return lines;
}

try {
  process.stdout.write((await main()).join('\n') + '\n');
} finally {
  await stopAll();
  await dispatcher.close();
}
