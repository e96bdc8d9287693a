/**
 * The benchmarks cannot rot: every bench `npm run bench` runs (read from package.json, so a new
 * one is covered when it is added there), plus the profiler, runs here with BENCH_SMOKE=1 (tiny
 * sizes and counts) and must exit 0 having printed its report. Their numbers are never
 * checked: timings do not belong in tests.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/processes.js';

const script: string = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).scripts.bench;
/** `node [flags] --import tsx bench/x.ts` commands of the bench script. */
const benches = script
  .split('&&')
  .map((c) => c.trim())
  .filter((c) => /^node .*bench\/\w+\.ts$/.test(c))
  .map((c) => c.split(/\s+/).slice(1));

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, BENCH_SMOKE: '1', BENCH_UPSTREAMS: 'lean', PATH: `${process.env.PATH}:/usr/sbin` };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, {
      cwd: ROOT,
      env,
      timeout: 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the benchmarks, in a smoke run', () => {
  it('are all found in the bench script', () => {
    expect(benches.map((b) => b.at(-1))).toEqual(
      expect.arrayContaining(['bench/run.ts', 'bench/pipeline.ts', 'bench/eras.ts', 'bench/several.ts', 'bench/replicas.ts']),
    );
  });

  it.each(benches.map((b) => [b.at(-1)!, b]))(
    '%s runs and reports',
    async (_, args) => {
      const r = await run(args);
      expect(r.code, r.stderr.slice(-2000)).toBe(0);
      expect(r.stdout).toMatch(/\d/); // a report with figures
      expect(r.stdout).not.toMatch(/\berror: /);
    },
    180_000,
  );

  it('the profiler runs on a route and prints its top frames', async () => {
    const r = await run(['--import', 'tsx', 'bench/profile.ts', 'a', 'lean', '200']);
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(0);
  }, 180_000);
});
