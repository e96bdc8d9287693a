/**
 * `npm run bench`: direct vs proxied, in one run, for a lean hand-written upstream and for
 * server-everything. Prints a markdown report and writes it to .bench/report.md.
 *
 * Knobs (env): BENCH_CALLS, BENCH_CALLS_EVERYTHING, BENCH_WARMUP, BENCH_CLIENTS, BENCH_CONC_CALLS,
 * BENCH_CONC_CALLS_EVERYTHING, BENCH_WARMUP_SECONDS, BENCH_ROUNDS, BENCH_RUN_SECONDS, BENCH_TOTAL_SECONDS, BENCH_SESSIONS,
 * BENCH_MEM_UPSTREAM (faulty|everything|lean), BENCH_UPSTREAMS (lean,everything), BENCH_LEAN_SSE=1,
 * BENCH_PROFILE_DIR (run every proxy under node --cpu-prof, profiles written there).
 * See bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { loadSettings } from './lib/settings.js';
import { measureMemory, type MemoryResult } from './lib/memory.js';
import { CLK_TCK, ROOT, cpuModel, killAllNow, machineTicks, stopAll, type Running } from './lib/procs.js';
import { MIN_TICKS, renderReport, type Comparison } from './lib/report.js';
import { batch, pool, warmUp, type RunResult } from './lib/measure.js';
import { openRoute, upstreamDefs, type OpenRoute, type Route, type UpstreamDef } from './lib/scenarios.js';
import { comparePeers, renderPeers, type PeerRow } from './lib/peers.js';

const settings = loadSettings();
const started = Date.now();
const deadline = started + settings.totalSeconds * 1000;
const skipped: string[] = [];
const log = (msg: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);

process.on('exit', killAllNow);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    log(`${sig}: stopping every process started`);
    void stopAll().finally(() => process.exit(130));
  });
}

function pkgVersion(path: string): string {
  try {
    return (JSON.parse(readFileSync(`${ROOT}${path}`, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function gitDescribe(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return `${sha}${dirty ? ' + uncommitted changes in src/' : ''}`;
  } catch {
    return 'unknown';
  }
}

/**
 * Compares a direct route with a proxied route. Both are set up once and warmed up, then measured
 * in alternating batches (direct, proxied, direct, proxied, ...; `rounds` each, calls/rounds
 * calls per batch) on the same warm sessions and processes, and the batches are pooled.
 * Alternating keeps slow drifts of a shared machine out of the ratio.
 */
async function compare(
  u: UpstreamDef,
  mode: Comparison['mode'],
  directRoute: Route,
  proxyRoute: Route,
  clients: number,
  calls: number,
  http: Running | undefined,
): Promise<Comparison> {
  const c: Comparison = { upstream: u.key, mode, directRoute, proxyRoute, roundRatios: [] };
  const what = `${u.key} ${clients}× ${mode}`;
  if (Date.now() > deadline) {
    skipped.push(`${what} (BENCH_TOTAL_SECONDS=${settings.totalSeconds} reached)`);
    c.error = 'skipped: time cap';
    return c;
  }
  const rounds = settings.rounds;
  const perRound = Math.ceil(calls / rounds);
  const maxMs = (settings.runSeconds * 1000) / rounds;
  const opened: OpenRoute[] = [];
  try {
    const base = { upstream: u, clients, http, profileDir: settings.profileDir };
    const d = await openRoute({ ...base, route: directRoute });
    opened.push(d);
    const p = await openRoute({ ...base, route: proxyRoute });
    opened.push(p);
    const wd = await warmUp(d.sessions, settings.warmup, settings.warmupSeconds * 1000);
    const wp = await warmUp(p.sessions, settings.warmup, settings.warmupSeconds * 1000);
    c.warmup = [wd, wp];
    const direct: RunResult[] = [];
    const proxied: RunResult[] = [];
    for (let r = 0; r < rounds; r++) {
      const rd = await batch(d.sessions, { calls: perRound, maxMs, pids: d.pids() });
      const rp = await batch(p.sessions, { calls: perRound, maxMs, pids: p.pids(), minProxyTicks: MIN_TICKS, maxCalls: perRound * 10 });
      direct.push(rd);
      proxied.push(rp);
      c.roundRatios.push(rp.callsPerSec / rd.callsPerSec);
      log(
        `${what} round ${r + 1}/${rounds}: direct ${rd.callsPerSec.toFixed(0)}, proxied ${rp.callsPerSec.toFixed(0)} calls/s (${rd.calls} / ${rp.calls} calls)`,
      );
    }
    c.direct = pool(direct);
    c.proxied = pool(proxied);
  } catch (err) {
    c.error = (err as Error).message;
    log(`${what}: FAILED ${c.error}`);
  } finally {
    for (const o of opened) await o.close();
  }
  return c;
}

/** How busy the machine is before the benchmark starts (% of one core over 2 s). */
async function idleCheck(): Promise<number> {
  const a = machineTicks();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 2000));
  const b = machineTicks();
  return (100 * (((b.busy - a.busy) * 1000) / CLK_TCK)) / (performance.now() - t0);
}

async function main(): Promise<number> {
  const busyBefore = await idleCheck();
  log(`machine busy before start: ${busyBefore.toFixed(0)} % of one core`);
  const defs = upstreamDefs(settings);
  const sequential: Comparison[] = [];
  const concurrent: Comparison[] = [];
  if (settings.profileDir) mkdirSync(settings.profileDir, { recursive: true });

  for (const key of settings.upstreams) {
    const u = defs[key];
    let http: Running | undefined;
    try {
      http = await u.startHttp();
      sequential.push(await compare(u, 'a', 'direct-stdio', 'proxy-a', 1, u.calls, http));
      sequential.push(await compare(u, 'b', 'direct-stdio', 'proxy-b', 1, u.calls, http));
      sequential.push(await compare(u, 'c', 'direct-http', 'proxy-c', 1, u.calls, http));
      concurrent.push(await compare(u, 'a', 'direct-stdio', 'proxy-a', settings.clients, u.concCalls, http));
      concurrent.push(await compare(u, 'c', 'direct-http', 'proxy-c', settings.clients, u.concCalls, http));
    } finally {
      await http?.stop();
    }
  }

  // The other gateways, in front of the lean server (its cost is the smallest, so theirs shows).
  let peers: PeerRow[] | undefined;
  if (Date.now() < deadline) peers = await comparePeers(defs.lean, settings, log);
  else skipped.push('comparison with other gateways');

  let memory: MemoryResult | undefined;
  let memoryError: string | undefined;
  if (Date.now() < deadline) {
    log(`memory: ${settings.sessions} sessions against ${settings.memUpstream} --http`);
    try {
      memory = await measureMemory(settings.memUpstream, settings.sessions, Math.min(60_000, Math.max(5_000, deadline - Date.now())));
      log(`memory: idle ${(memory.idleKb / 1024).toFixed(1)} MiB, ${memory.sessionsOpened} open ${(memory.openKb / 1024).toFixed(1)} MiB`);
    } catch (err) {
      memoryError = (err as Error).message.split('\n')[0];
      log(`memory: FAILED ${(err as Error).message}`);
    }
  } else {
    skipped.push('memory measurement');
  }

  const wallSeconds = (Date.now() - started) / 1000;
  const cpuList = cpus();
  const report = renderReport({
    header: [
      ['date', new Date().toISOString()],
      ['proxy', `mcp-negotiate-proxy ${pkgVersion('package.json')} at ${gitDescribe()} (dist/ rebuilt by npm run bench)`],
      ['node', `${process.version} (${process.platform} ${process.arch})`],
      ['cpu', `${cpuModel()} × ${cpuList.length} logical cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, CLK_TCK ${CLK_TCK}`],
      [
        'client',
        `@modelcontextprotocol/sdk ${pkgVersion('node_modules/@modelcontextprotocol/sdk/package.json')} Client (StdioClientTransport / StreamableHTTPClientTransport)`,
      ],
      [
        'upstreams',
        `lean = bench/lean-server.mjs (no SDK; HTTP mode answers ${settings.leanSse ? 'one-event SSE streams (BENCH_LEAN_SSE=1)' : 'application/json (BENCH_LEAN_SSE=1: SSE)'}); everything = @modelcontextprotocol/server-everything ${pkgVersion('node_modules/@modelcontextprotocol/server-everything/package.json')} (stdio / streamableHttp, SSE answers)`,
      ],
      [
        'counts',
        `sequential: ${settings.calls} calls (lean), ${settings.callsEverything} (everything); ` +
          `${settings.clients} clients: ${settings.concCalls} calls total (lean), ${settings.concCallsEverything} (everything); ` +
          `each split into ${settings.rounds} alternating batches (direct, proxied, direct, …) on the same warm sessions; ` +
          `warm-up per route: ${settings.warmup} calls or ${settings.warmupSeconds} s, whichever ends first, 4 calls in flight per session; ` +
          `cap ${settings.runSeconds} s per route over its batches; memory: ${settings.sessions} sessions`,
      ],
      [
        'proxy flags',
        `--port 0 --upstream … (log level info: one line per session, none per call); stdio front: --stdio --log-level warn${settings.profileDir ? `; under --cpu-prof (profiles in ${settings.profileDir}), so CPU numbers include profiler overhead` : ''}`,
      ],
      ['wall time', `${wallSeconds.toFixed(0)} s`],
      ['machine before start', `${busyBefore.toFixed(0)} % of one core busy (2 s sample, before any benchmark process started)`],
    ],
    sequential,
    concurrent,
    memory,
    memoryError,
    skipped,
    clients: settings.clients,
  });
  const full = peers ? `${report}\n\n${renderPeers(peers, defs.lean)}` : report;
  mkdirSync(`${ROOT}.bench`, { recursive: true });
  writeFileSync(`${ROOT}.bench/report.md`, full + '\n');
  process.stdout.write(full + '\n');
  log(`report written to .bench/report.md`);
  const failed =
    [...sequential, ...concurrent].some((c) => c.error && !c.error.startsWith('skipped')) || !!memoryError || !!peers?.some((r) => r.error);
  return failed ? 1 : 0;
}

main()
  .then(async (code) => {
    await stopAll();
    process.exitCode = code;
  })
  .catch(async (err) => {
    log(`failed: ${(err as Error).stack ?? String(err)}`);
    await stopAll();
    process.exitCode = 1;
  });
