/**
 * Benchmark knobs, all from the environment so `npm run bench` needs no arguments. Every loop in
 * the benchmark is bounded by one of these counts and by a time cap.
 */
/**
 * BENCH_SMOKE=1: every bench runs with tiny sizes and counts, to check that it runs and reports
 * (the suite does this), never for its numbers.
 */
export const SMOKE = ['1', 'true', 'yes'].includes((process.env.BENCH_SMOKE ?? '').toLowerCase());

/** `full` normally, `tiny` in a smoke run. */
export function smoke<T>(full: T, tiny: T): T {
  return SMOKE ? tiny : full;
}

export function int(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer in [${min}, ${max}], got "${raw}"`);
  return n;
}

function list(name: string, fallback: string[], allowed: string[]): string[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of items)
    if (!allowed.includes(item)) throw new Error(`${name}: unknown item "${item}" (allowed: ${allowed.join(', ')})`);
  return items;
}

export interface Settings {
  /** Measured sequential calls per run, lean upstream (this batch also yields the proxy CPU figure). */
  calls: number;
  /** Measured sequential calls per run, server-everything upstream (slower per call). */
  callsEverything: number;
  /** Warm-up calls per route (in total over its sessions), before its first measured batch... */
  warmup: number;
  /** ...or this long, whichever ends first. */
  warmupSeconds: number;
  /** Concurrent clients (one session each). */
  clients: number;
  /** Measured calls in total across the concurrent clients. */
  concCalls: number;
  concCallsEverything: number;
  /** Direct and proxied batches alternate this many times each; the counts are split over them. */
  rounds: number;
  /** Cap on one route's measured calls (over all rounds); a batch stopped by it says so. */
  runSeconds: number;
  /** Whole-benchmark cap: scenarios not started by then are skipped (and listed as skipped). */
  totalSeconds: number;
  /** Sessions held open for the memory measurement. */
  sessions: number;
  /** Upstream for the memory measurement. */
  memUpstream: 'faulty' | 'everything' | 'lean';
  upstreams: string[];
  /** The lean server's HTTP mode answers POSTs with one-event SSE streams instead of JSON. */
  leanSse: boolean;
  /** Set to a directory to run every proxy under `node --cpu-prof` (profiles written there). */
  profileDir: string | undefined;
}

export function loadSettings(): Settings {
  return {
    calls: int('BENCH_CALLS', smoke(6000, 20), 10, 1_000_000),
    callsEverything: int('BENCH_CALLS_EVERYTHING', smoke(3000, 20), 10, 1_000_000),
    warmup: int('BENCH_WARMUP', smoke(2500, 0), 0, 100_000),
    warmupSeconds: int('BENCH_WARMUP_SECONDS', smoke(3, 1), 1, 120),
    clients: int('BENCH_CLIENTS', smoke(8, 2), 1, 64),
    concCalls: int('BENCH_CONC_CALLS', smoke(8000, 20), 10, 1_000_000),
    concCallsEverything: int('BENCH_CONC_CALLS_EVERYTHING', smoke(4000, 20), 10, 1_000_000),
    rounds: int('BENCH_ROUNDS', smoke(2, 1), 1, 10),
    runSeconds: int('BENCH_RUN_SECONDS', smoke(10, 5), 1, 600),
    totalSeconds: int('BENCH_TOTAL_SECONDS', 240, 10, 3600),
    sessions: int('BENCH_SESSIONS', smoke(500, 5), 1, 5000),
    memUpstream: list('BENCH_MEM_UPSTREAM', ['faulty'], ['faulty', 'everything', 'lean'])[0] as Settings['memUpstream'],
    upstreams: list('BENCH_UPSTREAMS', ['lean', 'everything'], ['lean', 'everything']),
    leanSse: ['1', 'true', 'yes'].includes((process.env.BENCH_LEAN_SSE ?? '').toLowerCase()),
    profileDir: process.env.BENCH_PROFILE_DIR || undefined,
  };
}
