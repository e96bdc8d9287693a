/**
 * The measuring loops: a warm-up, then measured batches of sequential calls on each of one or
 * more sessions (each session has one call in flight at a time), bounded by a call count and a
 * time cap. CPU time of the processes involved is read from /proc around the measured batch.
 */
import type { BenchSession } from './clients.js';
import { CLK_TCK, cpuTimesOf, machineTicks } from './procs.js';

export interface Pids {
  /** The proxy process (empty for direct runs). */
  proxy: number[];
  /** The upstream server process(es). */
  upstream: number[];
}

export interface RunResult {
  clients: number;
  calls: number;
  elapsedMs: number;
  callsPerSec: number;
  p50: number;
  p99: number;
  mean: number;
  /** Every call's latency, ms, ascending. */
  latencies: Float64Array;
  /** True when the time cap ended the batch before the call count was reached. */
  capped: boolean;
  /** True when the batch ran past `calls` to collect enough proxy CPU ticks. */
  extended: boolean;
  cpu: {
    /** utime+stime ticks of the proxy over the measured batch (undefined: no proxy). */
    proxyTicks?: number;
    /** The part of proxyTicks spent in the kernel (stime). */
    proxySysTicks?: number;
    upstreamTicks: number;
    /** CPU time of this (client) process over the measured batch, ms (process.cpuUsage). */
    clientMs: number;
    /** Machine-wide busy ticks (all cores) and hypervisor steal ticks over the batch. */
    machineTicks: number;
    stealTicks: number;
  };
}

export interface BatchOptions {
  /** Measured calls in total (split across sessions by whoever is free). */
  calls: number;
  maxMs: number;
  /**
   * Keep going past `calls` (up to `maxCalls`) until the proxy has used this many clock ticks,
   * so one tick is a small fraction of the CPU figure. 0: stop at `calls`.
   */
  minProxyTicks?: number;
  maxCalls?: number;
  /** The processes whose CPU is read around the batch. */
  pids: Pids;
}

/**
 * Warm-up: `calls` in total over the sessions (at least 20 each), stopped early by `maxMs`, with
 * `inFlight` calls at a time on each session so that slow upstreams still get through enough
 * calls. Returns how many calls were made. V8 optimises the proxy's hot paths after ~2000 calls.
 */
export async function warmUp(sessions: BenchSession[], calls: number, maxMs: number, inFlight = 4): Promise<number> {
  const perLoop = Math.max(5, Math.ceil(calls / sessions.length / inFlight));
  const deadline = performance.now() + maxMs;
  let n = 0;
  await Promise.all(
    sessions.flatMap((s) =>
      Array.from({ length: inFlight }, async () => {
        for (let i = 0; i < perLoop && (i < 5 || performance.now() < deadline); i++) await s.call(n++);
      }),
    ),
  );
  return n;
}

/** One measured batch: each session makes sequential calls until the batch's count or time is up. */
export async function batch(sessions: BenchSession[], opts: BatchOptions): Promise<RunResult> {
  const n = sessions.length;
  const pids = opts.pids;
  const maxCalls = Math.max(opts.calls, opts.maxCalls ?? opts.calls);
  const latencies = new Float64Array(maxCalls);
  let target = opts.calls;
  let issued = 0;
  let done = 0;
  const cpu0 = process.cpuUsage();
  const machine0 = machineTicks();
  const proxy0 = pids.proxy.length ? cpuTimesOf(pids.proxy) : undefined;
  const up0 = cpuTimesOf(pids.upstream);
  const t0 = performance.now();
  const deadline = t0 + opts.maxMs;
  /** At the call target: raises it when the proxy's CPU is still too few ticks to read well. */
  const extend = (): boolean => {
    if (proxy0 === undefined || !opts.minProxyTicks || target >= maxCalls) return false;
    const now = cpuTimesOf(pids.proxy);
    const ticks = now[0] + now[1] - proxy0[0] - proxy0[1];
    if (ticks >= opts.minProxyTicks) return false;
    const needed = Math.ceil((opts.minProxyTicks * 1.2 * issued) / Math.max(ticks, 1));
    target = Math.min(maxCalls, Math.max(target + 500, needed));
    return true;
  };
  await Promise.all(
    sessions.map(async (s) => {
      while (performance.now() < deadline) {
        if (issued >= target && !extend()) break;
        const i = issued++;
        const start = performance.now();
        await s.call(i);
        latencies[done++] = performance.now() - start;
      }
    }),
  );
  const elapsedMs = performance.now() - t0;
  const proxy1 = proxy0 === undefined ? undefined : cpuTimesOf(pids.proxy);
  const up1 = cpuTimesOf(pids.upstream);
  const cpu = process.cpuUsage(cpu0);
  const machine1 = machineTicks();

  const sorted = latencies.subarray(0, done).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    clients: n,
    calls: done,
    elapsedMs,
    callsPerSec: (done / elapsedMs) * 1000,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    mean: done ? sum / done : NaN,
    latencies: sorted,
    capped: done < target,
    extended: target > opts.calls,
    cpu: {
      proxyTicks: proxy0 && proxy1 ? proxy1[0] + proxy1[1] - proxy0[0] - proxy0[1] : undefined,
      proxySysTicks: proxy0 && proxy1 ? proxy1[1] - proxy0[1] : undefined,
      upstreamTicks: up1[0] + up1[1] - up0[0] - up0[1],
      clientMs: (cpu.user + cpu.system) / 1000,
      machineTicks: machine1.busy - machine0.busy,
      stealTicks: machine1.steal - machine0.steal,
    },
  };
}

/** Pools several batches of the same route (rounds) into one result. */
export function pool(runs: RunResult[]): RunResult {
  const calls = runs.reduce((n, r) => n + r.calls, 0);
  const elapsedMs = runs.reduce((n, r) => n + r.elapsedMs, 0);
  const latencies = new Float64Array(calls);
  let at = 0;
  for (const r of runs) {
    latencies.set(r.latencies, at);
    at += r.latencies.length;
  }
  latencies.sort();
  const sumOf = (pick: (r: RunResult) => number | undefined) =>
    runs.some((r) => pick(r) === undefined) ? undefined : runs.reduce((n, r) => n + pick(r)!, 0);
  return {
    clients: runs[0].clients,
    calls,
    elapsedMs,
    callsPerSec: (calls / elapsedMs) * 1000,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    mean: runs.reduce((n, r) => n + r.mean * r.calls, 0) / calls,
    latencies,
    capped: runs.some((r) => r.capped),
    extended: runs.some((r) => r.extended),
    cpu: {
      proxyTicks: sumOf((r) => r.cpu.proxyTicks),
      proxySysTicks: sumOf((r) => r.cpu.proxySysTicks),
      upstreamTicks: sumOf((r) => r.cpu.upstreamTicks)!,
      clientMs: sumOf((r) => r.cpu.clientMs)!,
      machineTicks: sumOf((r) => r.cpu.machineTicks)!,
      stealTicks: sumOf((r) => r.cpu.stealTicks)!,
    },
  };
}

/** Nearest-rank quantile of an ascending array. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export const ticksToMs = (ticks: number) => (ticks * 1000) / CLK_TCK;
