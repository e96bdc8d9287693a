/**
 * `npm run bench` (part): replicas that share a secret, in one run.
 *  1. Sealing: seal + open of a legacy session token (what a replica does on a request it did
 *     not start), per token, next to JSON.stringify + JSON.parse of the same claims.
 *  2. Memory per open legacy session in front of an HTTP upstream (session ids are sealed
 *     tokens): heap after a GC, per session, on the replica that started them and on a second
 *     one that resumed every one of them from its token (two gateways in this process).
 *  3. Calls per second through one replica and through two (round robin, each session's calls
 *     alternating), same lean HTTP upstream and client load, next to the upstream directly; and
 *     the replicas' own CPU per call.
 *
 * Knobs (env): BENCH_SEAL_N (default 100000), BENCH_SESSIONS (default 400), BENCH_RPS_CALLS
 * (default 3000), BENCH_RPS_CONCURRENCY (default 8).
 */
import pino from 'pino';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config/load.js';
import { createGateway } from '../src/gateway.js';
import { Sealer } from '../src/sealing/sealer.js';
import { SessionTokens } from '../src/fronts/legacy/session-tokens.js';
import { CLK_TCK, cpuTimesOf, startLeanHttp, startProxy, stopAll } from './lib/procs.js';
import { smoke } from './lib/settings.js';

const SEAL_N = Number(process.env.BENCH_SEAL_N ?? smoke(100_000, 100));
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? smoke(400, 5));
const CALLS = Number(process.env.BENCH_RPS_CALLS ?? smoke(3000, 20));
const CONCURRENCY = Number(process.env.BENCH_RPS_CONCURRENCY ?? smoke(8, 2));
const SECRET = { MCP_PROXY_SECRET: 'bench-secret-0123456789abcdef0123456789' };
const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 64 });

function sealing(): void {
  const tokens = new SessionTokens(new Sealer([SECRET.MCP_PROXY_SECRET]), 'bench-replica');
  const claims = {
    principal: 'token:client-1',
    upstream: { id: '3f2c1d9e-5b7a-4c1e-9f0d-2a6b8c4e1f37', protocolVersion: '2025-11-25' },
    negotiation: {
      client: {
        sampling: {},
        extensions: {
          'io.modelcontextprotocol/content-negotiation': { version: 1, features: ['agent', 'format=json', 'verbosity=compact'] },
        },
      },
    },
  };
  const time = (fn: () => void) => {
    for (let i = 0; i < 2000; i++) fn(); // warm
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < SEAL_N; i++) fn();
    return Number(process.hrtime.bigint() - t0) / 1e6 / SEAL_N;
  };
  const token = tokens.mint(claims);
  const seal = time(() => tokens.mint(claims));
  const open = time(() => tokens.open(token));
  const plain = time(() => JSON.parse(JSON.stringify({ replica: 'bench-replica', issued: 1, ...claims })));
  console.log(
    `sealing: seal ${(seal * 1000).toFixed(1)} µs, open ${(open * 1000).toFixed(1)} µs, seal+open ${((seal + open) * 1000).toFixed(1)} µs per token (${(seal + open).toFixed(4)} ms; target ≤ 0.02 ms); JSON round trip of the same claims ${(plain * 1000).toFixed(1)} µs; token ${token.length} characters`,
  );
}

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown> }> {
  const res = await request(url, {
    method: 'POST',
    dispatcher,
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });
  await res.body.text();
  if (res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode} from ${url}`);
  return { status: res.statusCode, headers: res.headers };
}

async function openSession(url: string): Promise<Record<string, string>> {
  const init = await post(url, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  });
  const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

/** Heap after a full GC (the bench runs with --expose-gc), in bytes. */
function heapUsed(): number {
  for (let i = 0; i < 3; i++) (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

/** Two gateways in this process (so the heap can be read after a GC), sessions opened on one and resumed on the other. */
async function memory(upstream: string): Promise<void> {
  if (!(globalThis as { gc?: unknown }).gc) return console.log('memory per session: skipped (run with node --expose-gc)');
  const config = loadConfig({
    overrides: {
      upstream: { url: upstream },
      listen: { port: 0, perClient: { sessions: 1e6, requestsPerSecond: 1e6, inFlight: 1e6 } },
      replicas: { secret: SECRET.MCP_PROXY_SECRET },
      logLevel: 'silent',
    },
  });
  const log = pino({ level: 'silent' });
  const [ga, gb] = [createGateway(config, { log }), createGateway(config, { log })];
  const [a, b] = [(await ga.start()).url!, (await gb.start()).url!];
  const sessions: Array<Record<string, string>> = [];
  for (let i = 0; i < 20; i++) sessions.push(await openSession(a)); // warm
  for (const headers of sessions) await post(b, { jsonrpc: '2.0', id: 1, method: 'ping' }, headers);
  const h0 = heapUsed();
  for (let i = 0; i < SESSIONS; i++) sessions.push(await openSession(a));
  const h1 = heapUsed();
  for (const headers of sessions.slice(20)) await post(b, { jsonrpc: '2.0', id: 1, method: 'ping' }, headers);
  const h2 = heapUsed();
  const tokens = sessions.slice(20).reduce((n, h) => n + h['mcp-session-id'].length, 0);
  console.log(
    `memory per open session (HTTP upstream, sealed ids; heap after GC, both replicas in this process): ${((h1 - h0) / SESSIONS / 1024).toFixed(1)} KiB to start one, ` +
      `${((h2 - h1) / SESSIONS / 1024).toFixed(1)} KiB to resume one on another replica; the sealed id itself is ${(tokens / SESSIONS).toFixed(0)} characters (a random UUID: 36)`,
  );
  await Promise.all([ga.close(), gb.close()]);
}

/** Calls per second with `urls` taking turns; the processes' CPU ms per call. */
async function throughput(urls: string[], pids: number[]): Promise<{ rps: number; cpuMs: number }> {
  const sessions = await Promise.all(Array.from({ length: CONCURRENCY }, () => openSession(urls[0])));
  const call = (i: number) => ({
    jsonrpc: '2.0',
    id: i + 1,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: `call ${i}` } },
  });
  const cpu0 = cpuTimesOf(pids);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    sessions.map(async (headers) => {
      while (next < CALLS) {
        const i = next++;
        await post(urls[i % urls.length], call(i), headers);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = cpuTimesOf(pids);
  const ticks = cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1];
  return { rps: CALLS / seconds, cpuMs: (ticks * 1000) / CLK_TCK / CALLS };
}

async function main(): Promise<void> {
  sealing();
  const lean = await startLeanHttp();
  await memory(lean.url);
  const [a, b] = [await startProxy(lean.url, undefined, SECRET), await startProxy(lean.url, undefined, SECRET)];
  for (let round = 0; round < 2; round++) {
    const direct = await throughput([lean.url], []);
    const one = await throughput([a.url], [a.pid]);
    const two = await throughput([a.url, b.url], [a.pid, b.pid]);
    console.log(
      `calls/s (${CALLS} echo calls, ${CONCURRENCY} sessions at once): direct ${direct.rps.toFixed(0)}, one replica ${one.rps.toFixed(0)} (${one.cpuMs.toFixed(3)} ms proxy CPU per call), ` +
        `two replicas ${two.rps.toFixed(0)} (${two.cpuMs.toFixed(3)} ms per call, ${(two.rps / one.rps).toFixed(2)}× one replica)`,
    );
  }
  await stopAll();
  await dispatcher.close();
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exitCode = 1;
});
