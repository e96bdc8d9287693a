/**
 * Profiles the proxy on one benchmark route: runs it under `node --cpu-prof` while one client
 * (or BENCH_CLIENTS clients) makes calls through it, then prints the top frames.
 *
 *   npm run build && node --import tsx bench/profile.ts <a|b|c> [lean|everything] [calls] [clients]
 *
 * Profiles are kept under .bench/profiles/ (git-ignored); summarise again with bench/profile-top.ts.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { ROOT, stopAll, killAllNow, type Running } from './lib/procs.js';
import { openRoute, upstreamDefs, type Route } from './lib/scenarios.js';
import { batch, ticksToMs, warmUp } from './lib/measure.js';

const [mode = 'a', key = 'lean', callsArg = '6000', clientsArg = '1'] = process.argv.slice(2);
const route = ({ a: 'proxy-a', b: 'proxy-b', c: 'proxy-c' } as Record<string, Route>)[mode];
if (!route || !['lean', 'everything'].includes(key)) {
  process.stderr.write('usage: node --import tsx bench/profile.ts <a|b|c> [lean|everything] [calls] [clients]\n');
  process.exit(2);
}
const calls = Math.min(Math.max(Number(callsArg) || 6000, 10), 200_000);
const clients = Math.min(Math.max(Number(clientsArg) || 1, 1), 64);
const dir = `${ROOT}.bench/profiles/${new Date().toISOString().replace(/[:.]/g, '-')}-${mode}-${key}-${clients}`;
mkdirSync(dir, { recursive: true });
process.on('exit', killAllNow);

const u = upstreamDefs({ calls, callsEverything: calls, concCalls: calls, concCallsEverything: calls })[key];
let http: Running | undefined;
try {
  if (mode === 'c') http = await u.startHttp();
  const open = await openRoute({ upstream: u, route, clients, http, profileDir: dir });
  let r;
  try {
    await warmUp(open.sessions, 2500, 10_000);
    r = await batch(open.sessions, { calls, maxMs: 60_000, pids: open.pids() });
  } finally {
    await open.close();
  }
  const proxyMs = ticksToMs(r.cpu.proxyTicks ?? 0);
  process.stdout.write(
    `${route} ${key} ×${clients}: ${r.calls} calls, ${r.callsPerSec.toFixed(0)} calls/s, p50 ${r.p50.toFixed(3)} ms, ` +
      `proxy CPU ${(proxyMs / r.calls).toFixed(3)} ms/call (under the profiler)\n\n`,
  );
} finally {
  await http?.stop();
  await stopAll();
}
// The stdio-front proxy exits on its own once its client closes; give it a moment to write.
await new Promise((r) => setTimeout(r, 1500));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .map((f) => `${dir}/${f}`);
if (files.length === 0) throw new Error(`no profile written in ${dir}`);
process.stdout.write(
  execFileSync(process.execPath, ['--import', 'tsx', `${ROOT}bench/profile-top.ts`, ...files], { encoding: 'utf8', cwd: ROOT }),
);
