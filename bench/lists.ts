/**
 * What the list cache (upstream.listCache) saves: modern `tools/list` requests through the built
 * proxy, with the cache (maxAgeMs 60000) and without (0), in front of server-everything over
 * stdio (pooled sessions, declared stateless) and of a 2026-07-28 server over HTTP (the
 * list-counter fixture, which writes a line per tools/list it answers). Reports the upstream's
 * tools/list requests and the proxy's own CPU time per request (from /proc). Bounded by a count
 * of requests and a time cap.
 *
 *   npm run build && node --import tsx bench/lists.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLK_TCK, cpuTimes, EVERYTHING_MAIN, PROXY_MAIN, ROOT } from './lib/procs.js';
import { int, smoke } from './lib/settings.js';

const REQUESTS = int('BENCH_LIST_REQUESTS', smoke(2000, 20), 1, 1_000_000);
const IN_FLIGHT = 4;
const MAX_MS = smoke(60_000, 5_000);
const started: ChildProcess[] = [];

/** Spawns `argv` and resolves with the first match of `pattern` on `stream`. */
function start(
  argv: string[],
  stream: 'stdout' | 'stderr',
  pattern: RegExp,
  env: NodeJS.ProcessEnv = {},
): Promise<{ proc: ChildProcess; match: string }> {
  const proc = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(proc);
  proc.stdout.resume();
  proc.stderr.resume();
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${argv.join(' ')} did not start:\n${seen}`)), 20_000);
    proc[stream].on('data', (d: Buffer) => {
      seen += d.toString();
      const m = seen.match(pattern);
      if (m && timer.hasRef()) {
        clearTimeout(timer);
        resolve({ proc, match: m[1] });
      }
    });
  });
}

async function metric(url: string, series: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line ? Number(line.slice(series.length).trim()) : 0;
}

async function listMany(url: string, count: number): Promise<{ done: number }> {
  const body = (id: number) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
        },
      },
    });
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/list',
  };
  let next = 0;
  const end = Date.now() + MAX_MS;
  const worker = async () => {
    while (next < count && Date.now() < end) {
      const id = ++next;
      const res = await fetch(url, { method: 'POST', headers, body: body(id) });
      const text = await res.text();
      if (res.status !== 200 || !text.includes('"tools"')) throw new Error(`tools/list ${id}: HTTP ${res.status} ${text.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { done: next };
}

interface Row {
  upstream: string;
  cache: string;
  requests: number;
  upstreamLists: number;
  cpuMsPerList: number;
}

async function run(kind: 'everything' | 'modern', maxAgeMs: number): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-lists-'));
  const counts = join(dir, 'lists.jsonl');
  let upstreamYaml: string;
  if (kind === 'everything') {
    upstreamYaml = `  command: ${JSON.stringify([process.execPath, EVERYTHING_MAIN, 'stdio'])}\n  stateless: true\n`;
  } else {
    const argv = [process.execPath, '--import', 'tsx', `${ROOT}test/fixtures/list-counter.ts`, '--modern', '--http', '--port', '0'];
    const { match } = await start(argv, 'stdout', /LISTENING (http:\S+)/, { LIST_COUNT_FILE: counts });
    upstreamYaml = `  url: ${match}\n`;
  }
  const config = join(dir, 'proxy.yaml');
  writeFileSync(config, `upstream:\n${upstreamYaml}  listCache: { maxAgeMs: ${maxAgeMs} }\nmodern:\n  pool: { warmSpare: false }\n`);
  const { proc, match: url } = await start(
    [process.execPath, PROXY_MAIN, '--port', '0', '--config', config],
    'stderr',
    /"url":"(http:[^"]+)"/,
  );
  const upstreamLists = async () =>
    kind === 'everything'
      ? metric(url, 'mcp_proxy_upstream_request_duration_seconds_count{method="tools/list",outcome="ok"}')
      : existsSync(counts)
        ? readFileSync(counts, 'utf8').split('\n').filter(Boolean).length
        : 0;
  // Warm-up: the pooled session started, the era known, the code paths compiled.
  await listMany(url, smoke(300, 5));
  const before = await upstreamLists();
  const [u0, s0] = cpuTimes(proc.pid!);
  const { done } = await listMany(url, REQUESTS);
  const [u1, s1] = cpuTimes(proc.pid!);
  const after = await upstreamLists();
  proc.kill('SIGTERM');
  return {
    upstream: kind === 'everything' ? 'server-everything, stdio, pooled' : '2026-07-28 server, HTTP',
    cache: maxAgeMs === 0 ? 'off' : `maxAgeMs ${maxAgeMs}`,
    requests: done,
    upstreamLists: after - before,
    cpuMsPerList: ((u1 - u0 + s1 - s0) * 1000) / CLK_TCK / done,
  };
}

try {
  const rows: Row[] = [];
  for (const kind of ['everything', 'modern'] as const) for (const age of [60_000, 0]) rows.push(await run(kind, age));
  console.log('| Upstream | Cache | tools/list sent | reached the upstream | proxy CPU per tools/list |');
  console.log('|---|---|---|---|---|');
  for (const r of rows)
    console.log(`| ${r.upstream} | ${r.cache} | ${r.requests} | ${r.upstreamLists} | ${(r.cpuMsPerList * 1000).toFixed(0)} µs |`);
} finally {
  for (const proc of started) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
}
