/**
 * `npm run bench` (part): what the modern era costs the proxy next to the legacy path, in one
 * run, HTTP front → stdio upstream. The same tools/call is sent as a legacy session request and
 * as a modern stateless request, in alternating batches on warm connections; the proxy
 * process's own CPU time (from /proc, children excluded) is divided by the calls. Then one MRTR
 * round (a call that needs input, input_required, the retry, the result) against a plain call
 * on the same proxy in front of the conformance fixture. Last, in front of a 2026-07-28-only
 * server (test/fixtures/modern-server.ts, HTTP): a modern call sent to it directly, passed
 * through the proxy, through a bare node:http reverse proxy (the floor) and through fastify and
 * undici alone (the proxy's stack, bodies decoded), and a legacy session's call
 * bridged by the proxy, with each process's CPU.
 *
 * Knobs (env): BENCH_ERA_CALLS (per era, default 4000), BENCH_ERA_ROUNDS (default 8),
 * BENCH_MRTR_CALLS (default 300), BENCH_PROFILE_DIR (profile the era comparison's proxy there),
 * BENCH_BEFORE (another build's dist/main.js: the 2026-07-28 server rows again through it, same batches).
 */
import { Agent, request } from 'undici';
import { CLK_TCK, commandLine, cpuTimes, LEAN_MAIN, ROOT, startBareHttpProxy, startModernHttp, startProxy, stopAll } from './lib/procs.js';
import { smoke } from './lib/settings.js';

const CALLS = Number(process.env.BENCH_ERA_CALLS ?? smoke(4000, 20));
const ROUNDS = Number(process.env.BENCH_ERA_ROUNDS ?? smoke(8, 1));
const MRTR_CALLS = Number(process.env.BENCH_MRTR_CALLS ?? smoke(300, 5));
const IN_FLIGHT = 4;
const BEFORE = process.env.BENCH_BEFORE;
const V = '2026-07-28';
const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: IN_FLIGHT * 2 });

type Send = (id: number) => Promise<unknown>;

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<Record<string, unknown>> {
  const res = await request(url, {
    method: 'POST',
    dispatcher,
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  const json = text.startsWith('{')
    ? text
    : text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .at(-1)!
        .slice(6);
  const msg = JSON.parse(json) as { result?: Record<string, unknown>; error?: unknown };
  if (msg.error) throw new Error(JSON.stringify(msg.error));
  return msg.result ?? {};
}

async function legacySession(url: string): Promise<Record<string, string>> {
  const res = await request(url, {
    method: 'POST',
    dispatcher,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  });
  await res.body.text();
  const headers = { 'mcp-session-id': String(res.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers).catch(() => undefined);
  return headers;
}

const modernMeta = (capabilities: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
});
const modernHeaders = (method: string, name?: string) => ({
  'mcp-protocol-version': V,
  'mcp-method': method,
  ...(name ? { 'mcp-name': name } : {}),
});

/** Runs `n` sends, IN_FLIGHT at a time; returns the proxy's CPU ms per send. */
async function measure(pid: number, n: number, send: Send): Promise<number> {
  const [u0, s0] = cpuTimes(pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await send(next++);
    }),
  );
  const [u1, s1] = cpuTimes(pid);
  return ((u1 - u0 + s1 - s0) * 1000) / CLK_TCK / n;
}

/** Alternating batches of each kind; returns the pooled CPU ms per call of each. */
async function alternate(pid: number, kinds: Record<string, Send>, calls: number, rounds: number): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, send] of Object.entries(kinds))
      totals[name] = (totals[name] ?? 0) + (await measure(pid, Math.ceil(calls / rounds), send));
  }
  return Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, v / rounds]));
}

async function eras(): Promise<string[]> {
  const proxy = await startProxy(commandLine([process.execPath, LEAN_MAIN]), process.env.BENCH_PROFILE_DIR || undefined);
  const legacyHeaders = await legacySession(proxy.url);
  const call = (id: number) => ({ name: 'echo', arguments: { text: `hello ${id}` } });
  const kinds: Record<string, Send> = {
    legacy: (id) => post(proxy.url, { jsonrpc: '2.0', id, method: 'tools/call', params: call(id) }, legacyHeaders),
    modern: (id) =>
      post(
        proxy.url,
        { jsonrpc: '2.0', id, method: 'tools/call', params: { ...call(id), _meta: modernMeta() } },
        modernHeaders('tools/call', 'echo'),
      ),
  };
  await alternate(proxy.proc.pid!, kinds, 1000, 2); // warm-up: JIT, pooled session, connections
  const cpu = await alternate(proxy.proc.pid!, kinds, CALLS, ROUNDS);
  await proxy.stop();
  return [
    `| path (HTTP front → stdio upstream, lean server) | proxy CPU per tools/call |`,
    `|---|---:|`,
    `| legacy session (raw bytes relayed) | ${cpu.legacy.toFixed(3)} ms |`,
    `| modern stateless request | ${cpu.modern.toFixed(3)} ms |`,
    `| ratio modern / legacy | **${(cpu.modern / cpu.legacy).toFixed(2)}×** (target ≤ 1.3×) |`,
  ];
}

async function mrtr(): Promise<string[]> {
  const fixture = [process.execPath, '--import', 'tsx', `${ROOT}test/fixtures/conformance-server.ts`];
  const proxy = await startProxy(commandLine(fixture));
  const caps = { elicitation: { form: {} } };
  const plain: Send = (id) =>
    post(
      proxy.url,
      { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'test_simple_text', arguments: {}, _meta: modernMeta(caps) } },
      modernHeaders('tools/call', 'test_simple_text'),
    );
  const round: Send = async (id) => {
    const name = 'test_input_required_result_elicitation';
    const first = await post(
      proxy.url,
      { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: modernMeta(caps) } },
      modernHeaders('tools/call', name),
    );
    const done = await post(
      proxy.url,
      {
        jsonrpc: '2.0',
        id: `${id}r`,
        method: 'tools/call',
        params: {
          name,
          arguments: {},
          inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
          requestState: first.requestState,
          _meta: modernMeta(caps),
        },
      },
      modernHeaders('tools/call', name),
    );
    if (done.resultType !== 'complete') throw new Error('MRTR round did not complete');
  };
  await alternate(proxy.proc.pid!, { plain, round }, 100, 1);
  const cpu = await alternate(proxy.proc.pid!, { plain, round }, MRTR_CALLS, 3);
  await proxy.stop();
  return [
    `| modern tools/call in front of the conformance fixture (stdio) | proxy CPU |`,
    `|---|---:|`,
    `| plain call (complete at once) | ${cpu.plain.toFixed(3)} ms |`,
    `| one MRTR round: call → input_required → retry with inputResponses → complete | ${cpu.round.toFixed(3)} ms |`,
  ];
}

/** Alternating batches of each kind, sent `IN_FLIGHT` at a time: wall ms per call, and CPU ms per call of each process in `pids`. */
async function costs(
  pids: Record<string, number>,
  kinds: Record<string, Send>,
  calls: number,
  rounds: number,
): Promise<Record<string, { wall: number; cpu: Record<string, number> }>> {
  const out: Record<string, { wall: number; cpu: Record<string, number> }> = {};
  const ms = (pid: number) => ((cpuTimes(pid)[0] + cpuTimes(pid)[1]) * 1000) / CLK_TCK;
  for (let r = 0; r < rounds; r++) {
    for (const [name, send] of Object.entries(kinds)) {
      const n = Math.ceil(calls / rounds);
      const before = Object.fromEntries(Object.entries(pids).map(([p, pid]) => [p, ms(pid)]));
      const start = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < n) await send(next++);
        }),
      );
      const row = (out[name] ??= { wall: 0, cpu: {} });
      row.wall += (performance.now() - start) / n / rounds;
      for (const [p, pid] of Object.entries(pids)) row.cpu[p] = (row.cpu[p] ?? 0) + (ms(pid) - before[p]) / n / rounds;
    }
  }
  return out;
}

async function modernUpstream(): Promise<string[]> {
  const upstream = await startModernHttp();
  const proxy = await startProxy(upstream.url);
  const bare = await startBareHttpProxy(upstream.url);
  const stack = await startBareHttpProxy(upstream.url, 'fastify');
  // Another build of the proxy (BENCH_BEFORE: its dist/main.js), measured in the same batches: before and after a change.
  const before = BEFORE ? await startProxy(upstream.url, undefined, {}, BEFORE) : undefined;
  const call = (id: number) => ({ name: 'echo', arguments: { text: `hello ${id}` } });
  const modern =
    (url: string): Send =>
    (id) =>
      post(
        url,
        { jsonrpc: '2.0', id, method: 'tools/call', params: { ...call(id), _meta: modernMeta() } },
        modernHeaders('tools/call', 'echo'),
      );
  const bridged = async (url: string): Promise<Send> => {
    const headers = await legacySession(url);
    return (id) => post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: call(id) }, headers);
  };
  const kinds: Record<string, Send> = {
    direct: modern(upstream.url),
    bare: modern(bare.url),
    stack: modern(stack.url),
    passed: modern(proxy.url),
    bridged: await bridged(proxy.url),
    ...(before ? { 'passed-before': modern(before.url), 'bridged-before': await bridged(before.url) } : {}),
  };
  const pids = {
    proxy: proxy.proc.pid!,
    upstream: upstream.proc.pid!,
    bare: bare.proc.pid!,
    stack: stack.proc.pid!,
    ...(before ? { before: before.proc.pid! } : {}),
  };
  await costs(pids, kinds, smoke(600, 6), 1); // warm-up
  const c = await costs(pids, kinds, smoke(CALLS / 2, 20), ROUNDS);
  await Promise.all([proxy.stop(), bare.stop(), stack.stop(), before?.stop()]);
  await upstream.stop();
  const own = (k: string) => (k === 'bare' || k === 'stack' ? c[k].cpu[k] : k.endsWith('-before') ? c[k].cpu.before : c[k].cpu.proxy);
  const row = (label: string, k: string) =>
    `| ${label} | ${c[k].wall.toFixed(3)} ms | ${(c[k].wall / c.direct.wall).toFixed(2)}× | ${k === 'direct' ? '—' : `${own(k).toFixed(3)} ms`} | ${k === 'direct' ? '—' : `${(own(k) / c.bare.cpu.bare).toFixed(2)}×`} | ${c[k].cpu.upstream.toFixed(3)} ms |`;
  return [
    `| tools/call in front of a 2026-07-28-only server (v2 SDK, HTTP), ${IN_FLIGHT} in flight | wall per call | × direct | gateway CPU per call | × bare proxy CPU | server CPU per call |`,
    `|---|---:|---:|---:|---:|---:|`,
    row('modern client, directly', 'direct'),
    row('modern client, through a bare node:http reverse proxy', 'bare'),
    row("modern client, through fastify and undici alone (the proxy's stack, bodies decoded, nothing else)", 'stack'),
    row('modern client, passed through the proxy (target ≤ 1.3× bare)', 'passed'),
    row('legacy session, bridged by the proxy (target ≤ 1.5× bare)', 'bridged'),
    ...(before
      ? [
          row('modern client, passed through the build before', 'passed-before'),
          row('legacy session, bridged by the build before', 'bridged-before'),
        ]
      : []),
  ];
}

try {
  const lines = ['## Protocol eras', '', ...(await eras()), '', ...(await mrtr()), '', ...(await modernUpstream()), ''];
  process.stdout.write(lines.join('\n') + '\n');
} finally {
  await stopAll();
  await dispatcher.close();
}
