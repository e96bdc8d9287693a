/**
 * Turns the benchmark's results into a self-describing markdown report.
 */
import { WARM_SESSIONS, type MemoryResult } from './memory.js';
import { ticksToMs, type RunResult } from './measure.js';
import { CLK_TCK } from './procs.js';
import { ROUTE_LABEL, type Route } from './scenarios.js';

export const TARGET_CPU_MS = 0.15;
export const TARGET_RATIO = 0.8;
/** Under 2 % tick resolution: at least 50 ticks of proxy CPU in the batch. */
export const MIN_TICKS = 50;

export interface Comparison {
  upstream: string;
  /** Short name: (a), (b), (c). */
  mode: 'a' | 'b' | 'c';
  directRoute: Route;
  proxyRoute: Route;
  direct?: RunResult;
  proxied?: RunResult;
  /** proxied/direct calls/s of each round. */
  roundRatios: number[];
  /** Warm-up calls made: direct, proxied. */
  warmup?: [number, number];
  error?: string;
}

export interface ReportInput {
  header: Array<[string, string]>;
  sequential: Comparison[];
  concurrent: Comparison[];
  memory?: MemoryResult;
  memoryError?: string;
  skipped: string[];
  clients: number;
}

const MODE_LABEL = {
  a: '(a) HTTP front → stdio upstream',
  b: '(b) stdio front → stdio upstream',
  c: '(c) HTTP front → HTTP upstream',
};

const f = (v: number | undefined, digits = 2) => (v === undefined || Number.isNaN(v) ? '–' : v.toFixed(digits));
const int = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '–' : Math.round(v).toLocaleString('en-US'));
const mb = (kb: number) => (kb / 1024).toFixed(1);
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

function ratioCell(c: Comparison): string {
  if (!c.direct || !c.proxied) return '–';
  const r = c.proxied.callsPerSec / c.direct.callsPerSec;
  const spread =
    c.roundRatios.length > 1 ? ` (rounds ${Math.min(...c.roundRatios).toFixed(2)}–${Math.max(...c.roundRatios).toFixed(2)})` : '';
  return `${r.toFixed(2)}×${spread} ${verdict(r >= TARGET_RATIO)}`;
}

function throughputTable(rows: Comparison[]): string[] {
  const out = [
    '| upstream | scenario | direct calls/s | proxied calls/s | proxied/direct (≥ 0.80) | direct p50 / p99 ms | proxied p50 / p99 ms | added p50 ms | measured calls (direct / proxied) | warm-up calls |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of rows) {
    if (c.error) {
      out.push(`| ${c.upstream} | ${MODE_LABEL[c.mode]} | error: ${c.error.split('\n')[0].slice(0, 160)} | | | | | | | |`);
      continue;
    }
    const d = c.direct;
    const p = c.proxied;
    const capped = (r?: RunResult) => (r?.capped ? ' (time cap)' : r?.extended ? ' (extended)' : '');
    out.push(
      `| ${c.upstream} | ${MODE_LABEL[c.mode]} | ${int(d?.callsPerSec)} | ${int(p?.callsPerSec)} | ${ratioCell(c)} | ` +
        `${f(d?.p50, 3)} / ${f(d?.p99, 3)} | ${f(p?.p50, 3)} / ${f(p?.p99, 3)} | ${d && p ? f(p.p50 - d.p50, 3) : '–'} | ` +
        `${int(d?.calls)}${capped(d)} / ${int(p?.calls)}${capped(p)} | ${c.warmup ? `${int(c.warmup[0])} / ${int(c.warmup[1])}` : '–'} |`,
    );
  }
  return out;
}

/**
 * (a) against a baseline with the same client transport: the proxied (a) route vs the direct
 * HTTP client of (c), i.e. the same server code in its HTTP mode.
 */
function matchedRows(rows: Comparison[]): string[] {
  const out: string[] = [];
  for (const a of rows.filter((c) => c.mode === 'a' && c.proxied)) {
    const c = rows.find((r) => r.mode === 'c' && r.upstream === a.upstream && r.direct);
    if (!c?.direct || !a.proxied) continue;
    const r = a.proxied.callsPerSec / c.direct.callsPerSec;
    out.push(
      `| ${a.upstream} | ${int(c.direct.callsPerSec)} | ${int(a.proxied.callsPerSec)} | ${r.toFixed(2)}× ${verdict(r >= TARGET_RATIO)} |`,
    );
  }
  if (out.length === 0) return [];
  return [
    '(a) with a same-client-transport baseline: proxied (a) against the direct SDK HTTP client of (c) — the same server',
    "code in its HTTP mode (so the server side's transport differs instead; measured in separate comparisons, not alternated).",
    '',
    '| upstream | direct HTTP client → server (HTTP) calls/s | proxied (a) calls/s | ratio |',
    '|---|---:|---:|---:|',
    ...out,
    '',
  ];
}

function cpuRows(all: Comparison[]): string[] {
  const out = [
    `| upstream | scenario | clients | relayed calls | proxy ticks | proxy CPU ms | **ms / call** (≤ ${TARGET_CPU_MS}) | in kernel (stime) | tick resolution | proxy busy (CPU / wall) |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of all) {
    const p = c.proxied;
    if (!p || p.cpu.proxyTicks === undefined) continue;
    const ticks = p.cpu.proxyTicks;
    const ms = ticksToMs(ticks);
    const perCall = ms / p.calls;
    // Each round's reading is off by up to one tick.
    const rounds = Math.max(1, c.roundRatios.length);
    const resolution = ticks > 0 ? ((100 * rounds) / ticks).toFixed(1) + ' %' : '–';
    const enough = ticks >= MIN_TICKS * rounds ? '' : ' (too few ticks)';
    out.push(
      `| ${c.upstream} | ${MODE_LABEL[c.mode]} | ${p.clients} | ${int(p.calls)} | ${ticks} | ${int(ms)} | **${perCall.toFixed(3)}** ${verdict(perCall <= TARGET_CPU_MS)} | ${ticks ? ((100 * (p.cpu.proxySysTicks ?? 0)) / ticks).toFixed(0) : '–'} % | ${resolution}${enough} | ${((ms / p.elapsedMs) * 100).toFixed(0)} % |`,
    );
  }
  return out;
}

const totalCpuPerCall = (r: RunResult) => (r.cpu.clientMs + ticksToMs((r.cpu.proxyTicks ?? 0) + r.cpu.upstreamTicks)) / r.calls;

/**
 * If client, proxy and upstream were only CPU-bound on a machine whose cores they saturate, the
 * throughput ratio would be direct CPU per call / proxied CPU per call.
 */
function cpuBoundRows(all: Array<Comparison & { kind: string }>): string[] {
  const out = [
    '| upstream | scenario | direct CPU ms/call | proxied CPU ms/call | CPU ratio (direct / proxied) | measured throughput ratio |',
    '|---|---|---:|---:|---:|---:|',
  ];
  for (const c of all) {
    if (!c.direct || !c.proxied) continue;
    const d = totalCpuPerCall(c.direct);
    const p = totalCpuPerCall(c.proxied);
    out.push(
      `| ${c.upstream} | ${c.kind} ${MODE_LABEL[c.mode]} | ${f(d, 3)} | ${f(p, 3)} | ${(d / p).toFixed(2)} | ${(c.proxied.callsPerSec / c.direct.callsPerSec).toFixed(2)} |`,
    );
  }
  return out;
}

/** CPU used on the machine during a batch by processes other than client, proxy and upstream, in % of one core. */
function otherPct(r: RunResult): number {
  const ours = r.cpu.clientMs + ticksToMs((r.cpu.proxyTicks ?? 0) + r.cpu.upstreamTicks);
  return (100 * Math.max(0, ticksToMs(r.cpu.machineTicks) - ours)) / r.elapsedMs;
}
const otherLoad = (r: RunResult) => `${otherPct(r).toFixed(0)} %`;

function breakdownRows(all: Array<Comparison & { kind: string }>): string[] {
  const out = [
    '| upstream | scenario | route | clients | client ms/call | proxy ms/call | upstream ms/call | total CPU ms/call | wall ms/call (1 / aggregate rate) | other CPU on the machine | steal |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of all) {
    for (const [route, r] of [
      [c.directRoute, c.direct],
      [c.proxyRoute, c.proxied],
    ] as const) {
      if (!r) continue;
      const client = r.cpu.clientMs / r.calls;
      const proxy = r.cpu.proxyTicks === undefined ? undefined : ticksToMs(r.cpu.proxyTicks) / r.calls;
      const up = ticksToMs(r.cpu.upstreamTicks) / r.calls;
      out.push(
        `| ${c.upstream} | ${c.kind} ${c.mode} | ${ROUTE_LABEL[route]} | ${r.clients} | ${f(client, 3)} | ${f(proxy, 3)} | ${f(up, 3)} | ${f(client + (proxy ?? 0) + up, 3)} | ${f(r.elapsedMs / r.calls, 3)} | ` +
          `${otherLoad(r)} | ${((100 * ticksToMs(r.cpu.stealTicks)) / r.elapsedMs).toFixed(0)} % |`,
      );
    }
  }
  return out;
}

export function renderReport(input: ReportInput): string {
  const lines: string[] = [];
  lines.push('# mcp-negotiate-proxy: direct vs proxied benchmark', '');
  lines.push('| | |', '|---|---|');
  for (const [k, v] of input.header) lines.push(`| ${k} | ${v} |`);
  lines.push('');
  lines.push(
    "Each route (direct or proxied) is set up once and warmed up (V8 optimises the proxy's hot paths after ~2000 calls),",
    "then measured in batches that alternate with the other route's (direct, proxied, direct, proxied) on the same warm",
    'sessions; the batches are pooled, and the ratio of each direct/proxied pair of batches is shown as the "rounds" spread.',
    'A call is one `tools/call echo` made with the official SDK `Client.callTool` (result checked). Latency is per call as',
    'the client sees it; p50/p99 are nearest-rank over all measured calls.',
    "Client, proxy and upstream(s) all run on this machine and share its cores, so every process's CPU competes with the",
    "others: on a 2-core box a proxy's CPU is taken directly from the client and the upstream.",
    '',
    'Routes: direct baselines are the same server reached by the same SDK client without the proxy.',
    "In (a) the client-side transport differs (proxied: Streamable HTTP, direct: stdio), so (a)'s ratio mixes the proxy's",
    "cost with the cost difference between the SDK's HTTP and stdio client transports. (b) and (c) keep the client transport.",
    'With a stdio upstream the proxy starts one upstream process per client session, just as the direct stdio clients do.',
    '',
  );

  const all = [...input.sequential, ...input.concurrent].flatMap((c) => [c.direct, c.proxied]).filter((r): r is RunResult => !!r);
  const noisy = all.filter((r) => otherPct(r) > 15 || (100 * ticksToMs(r.cpu.stealTicks)) / r.elapsedMs > 5).length;
  if (noisy) {
    lines.push(
      `**Noise:** in ${noisy} of ${all.length} measured routes other processes or the hypervisor took over 15 % of a core (or 5 % steal); see the CPU breakdown. Re-run on a quiet machine before trusting small differences.`,
      '',
    );
  }
  lines.push('## 1. Sequential calls (1 client, 1 session, one call in flight)', '');
  lines.push(...throughputTable(input.sequential), '');
  lines.push(...matchedRows(input.sequential));

  lines.push(`## 2. ${input.clients} concurrent clients (${input.clients} sessions, each making sequential calls)`, '');
  lines.push('Aggregate calls/s over all clients; latency percentiles over all calls.', '');
  lines.push(...throughputTable(input.concurrent), '');
  lines.push(...matchedRows(input.concurrent));

  lines.push('## 3. Proxy CPU per relayed tools/call', '');
  lines.push(
    `utime+stime of the proxy process from /proc/<pid>/stat (clock ticks, CLK_TCK=${CLK_TCK}) read right before and after each`,
    'proxied measured batch above (all after the warm-up), summed over the batches, divided by the calls. Raw: nothing',
    'subtracted (all threads: JS, GC, JIT compiler, libuv; logging; for HTTP upstreams the undici client). Child processes',
    '(stdio upstreams) are not included.',
    `A proxied batch runs past its call count (up to 10×, within the time cap) until the proxy has used ≥ ${MIN_TICKS} ticks in it.`,
    `Tick resolution = batches / ticks measured (up to one tick of rounding per batch); rows over 2 % are flagged.`,
    '',
  );
  lines.push(...cpuRows([...input.sequential, ...input.concurrent]), '');

  lines.push('### Where the CPU goes (every run, ms of CPU per call)', '');
  lines.push(
    'client = this benchmark process (SDK Client + transport), from process.cpuUsage(); proxy and upstream from /proc.',
    'Wall ms/call = elapsed / calls: with one client it is the mean round trip; with N clients, N calls overlap.',
    'Other CPU = machine-wide busy time (/proc/stat) minus the three above, in % of one core over the batch (kernel',
    'threads, anything else running); steal = time the hypervisor gave to other guests. High values mean a noisy run.',
    '',
  );
  lines.push(
    ...breakdownRows([
      ...input.sequential.map((c) => ({ ...c, kind: 'seq' })),
      ...input.concurrent.map((c) => ({ ...c, kind: `${input.clients}×` })),
    ]),
    '',
  );

  lines.push(
    'All processes share the same cores, so once they keep the cores busy (several clients, or one process that is',
    'always runnable) throughput tracks total CPU per call: the proxied/direct ratio tends to direct CPU ÷ proxied CPU',
    '(client + proxy + upstream). Sequential single-client runs are latency-bound instead and can fall below it.',
    '',
    ...cpuBoundRows([
      ...input.sequential.map((c) => ({ ...c, kind: 'seq' })),
      ...input.concurrent.map((c) => ({ ...c, kind: `${input.clients}×` })),
    ]),
    '',
  );

  lines.push('## 4. Proxy memory (RSS from /proc/<pid>/status VmRSS)', '');
  const m = input.memory;
  if (m) {
    const perSession = (m.openKb - m.warmKb) / m.sessionsOpened;
    lines.push(
      `HTTP front → HTTP upstream (${m.upstream === 'faulty' ? 'test/fixtures/faulty-server.ts --http' : m.upstream === 'everything' ? 'server-everything streamableHttp' : 'bench/lean-server.mjs --http'}).`,
      `Sessions opened one after another with plain fetch (initialize, then notifications/initialized), held open, then DELETEd.`,
      `The proxy opens one upstream session per client session, plus that session's GET stream when the upstream offers one.`,
      '',
      '| state | RSS MiB | open fds |',
      '|---|---:|---:|',
      `| idle (started, no session yet) | ${mb(m.idleKb)} | ${m.idleFds} |`,
      `| warm (after ${WARM_SESSIONS} sessions opened and DELETEd) | ${mb(m.warmKb)} | – |`,
      ...(m.halfKb !== undefined ? [`| ${m.half} sessions open | ${mb(m.halfKb)} | ${m.halfFds} |`] : []),
      `| ${m.sessionsOpened} sessions open${m.capped ? ' (time cap hit)' : ''} | ${mb(m.openKb)} | ${m.openFds} |`,
      `| after DELETE of all | ${mb(m.afterCloseKb)} | – |`,
      '',
      `Per open session: (open − warm) / ${m.sessionsOpened} = **${perSession.toFixed(1)} KiB** ` +
        `((open − idle) / ${m.sessionsOpened} = ${((m.openKb - m.idleKb) / m.sessionsOpened).toFixed(1)} KiB). ` +
        (m.halfKb !== undefined && m.sessionsOpened > m.half
          ? `Second half only: (open − ${m.half} open) / ${m.sessionsOpened - m.half} = ${((m.openKb - m.halfKb) / (m.sessionsOpened - m.half)).toFixed(1)} KiB. `
          : '') +
        `RSS moves with V8 heap growth and GC timing, so these figures vary by some KiB per session between runs. ` +
        `Sessions reported by /healthz while open: ${m.sessionsReported ?? 'unknown'}. Opening took ${m.openSeconds.toFixed(1)} s ` +
        `(${(m.sessionsOpened / m.openSeconds).toFixed(0)} sessions/s).`,
      '',
    );
  } else {
    lines.push(`not measured${input.memoryError ? `: ${input.memoryError}` : ''}`, '');
  }

  if (input.skipped.length) lines.push('## Skipped (time cap)', '', ...input.skipped.map((s) => `- ${s}`), '');
  return lines.join('\n');
}
