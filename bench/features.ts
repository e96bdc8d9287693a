/**
 * What each operations feature of the HTTP front costs per relayed call: the proxy started in
 * several variants (flags, config files, or another build of dist/main.js), and the bare relay
 * as the floor, each in front of the lean server over stdio with one SDK HTTP client; batches
 * alternate between them, so a shared machine's drift hits all alike (only ratios within one run
 * mean anything). The figure is the gateway process's own CPU per call (/proc).
 *
 *   node --import tsx bench/features.ts [--rounds N] [--calls N] <variant>...
 *
 * A variant is `label=<main.js>|<config.yaml>|<extra CLI args, comma-separated>`; empty parts take
 * the defaults (dist/main.js, bench/proxy.yaml, none); `bare` is the bare relay, `fastify` the same
 * relay on fastify (what the web framework costs by itself), and `mcp-proxy` and
 * `supergateway` are those gateways as bench/lib/peers.ts starts them. Example:
 *
 *   node --import tsx bench/features.ts bare 'info=||' 'warn=||--log-level,warn' 'no-limits=|bench/nolimits.yaml|'
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from '../test/helpers/processes.js';
import { ROOT, childPids, commandLine, killAllNow, stopAll, startPeer, type Running } from './lib/procs.js';
import { connectHttp, type BenchSession } from './lib/clients.js';
import { batch, pool, ticksToMs, warmUp, type Pids, type RunResult } from './lib/measure.js';
import { MIN_TICKS } from './lib/report.js';
import { LEAN_MAIN } from './lib/procs.js';

interface Variant {
  label: string;
  start(): Promise<{ url: string; pid: number; stop(): Promise<void> }>;
}

const argv = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const at = argv.indexOf(name);
  return at >= 0 ? Number(argv.splice(at, 2)[1]) : fallback;
};
const rounds = opt('--rounds', 6);
const calls = opt('--calls', 1500);
const upstream = [process.execPath, LEAN_MAIN];

const spawned = new Set<ChildProcess>();
process.on('exit', () => spawned.forEach((p) => p.kill('SIGKILL')));
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));

function proxyVariant(label: string, main: string, config: string, extra: string[]): Variant {
  return {
    label,
    async start() {
      const port = await freePort();
      const args = [
        main || `${ROOT}dist/main.js`,
        '--port',
        String(port),
        '--config',
        config || `${ROOT}bench/proxy.yaml`,
        ...extra,
        '--upstream',
        commandLine(upstream),
      ];
      const proc = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      spawned.add(proc);
      proc.once('exit', () => spawned.delete(proc));
      let tail = '';
      proc.stderr.on('data', (d: Buffer) => (tail = (tail + d.toString()).slice(-2000))); // drained for the process's whole life, as a log shipper would
      const stop = () =>
        new Promise<void>((done) => (proc.exitCode !== null ? done() : (proc.once('exit', () => done()), proc.kill('SIGTERM'))));
      for (const until = Date.now() + 20_000; !(await accepts(port)); await new Promise((r) => setTimeout(r, 50))) {
        if (proc.exitCode !== null || Date.now() > until) {
          await stop();
          throw new Error(`${label} did not start: ${tail}`);
        }
      }
      return { url: `http://127.0.0.1:${port}/mcp`, pid: proc.pid!, stop };
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => (socket.end(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

const variants: Variant[] = argv.map((spec) => {
  if (spec === 'bare') return { label: 'bare node:http relay', start: async (): Promise<Running> => startPeer('bare-relay', upstream) };
  if (spec === 'fastify')
    return { label: 'the bare relay on fastify', start: async (): Promise<Running> => startPeer('fastify-relay', upstream) };
  if (spec === 'mcp-proxy' || spec === 'supergateway')
    return { label: spec, start: async (): Promise<Running> => startPeer(spec, upstream) };
  const [label, rest = ''] = spec.split(/=(.*)/s);
  const [main = '', config = '', extra = ''] = rest.split('|');
  return proxyVariant(label, main, config, extra ? extra.split(',') : []);
});
if (variants.length === 0) {
  process.stderr.write(
    'usage: node --import tsx bench/features.ts [--rounds N] [--calls N] <bare | fastify | mcp-proxy | supergateway | label=main|config|args>...\n',
  );
  process.exit(2);
}

process.on('exit', killAllNow);
const opened: Array<{ v: Variant; stop(): Promise<void>; session: BenchSession; pids: () => Pids }> = [];
try {
  for (const v of variants) {
    const p = await v.start();
    const session = await connectHttp(p.url, { argName: 'text' });
    opened.push({
      v,
      session,
      pids: () => ({ proxy: [p.pid], upstream: childPids(p.pid) }),
      stop: async () => (await session.close(), await p.stop()),
    });
    await warmUp([session], 2500, 10_000);
  }
  const runs: RunResult[][] = opened.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (const [i, o] of opened.entries())
      runs[i].push(await batch([o.session], { calls, maxMs: 60_000, pids: o.pids(), minProxyTicks: MIN_TICKS, maxCalls: calls * 10 }));
    process.stderr.write(`round ${r + 1}/${rounds}\n`);
  }
  const ms = runs.map((list) => {
    const p = pool(list);
    return {
      ms: ticksToMs(p.cpu.proxyTicks ?? 0) / p.calls,
      calls: p.calls,
      perRound: list.map((x) => ticksToMs(x.cpu.proxyTicks ?? 0) / x.calls),
    };
  });
  const floor = opened.findIndex((o) => o.v.label.startsWith('bare'));
  // Each round's ratio to the bare relay measured in that round: slow drifts of a shared machine cancel out.
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  process.stdout.write(
    '| variant | calls | CPU ms / call | × bare (pooled) | × bare (median of rounds) | per round |\n|---|---:|---:|---:|---:|---|\n',
  );
  for (const [i, o] of opened.entries()) {
    const pooled = floor >= 0 ? `${(ms[i].ms / ms[floor].ms).toFixed(2)}×` : '';
    const perRound = floor >= 0 ? `${median(ms[i].perRound.map((x, r) => x / ms[floor].perRound[r])).toFixed(2)}×` : '';
    process.stdout.write(
      `| ${o.v.label} | ${ms[i].calls} | ${ms[i].ms.toFixed(3)} | ${pooled} | ${perRound} | ${ms[i].perRound.map((x) => x.toFixed(3)).join(' ')} |\n`,
    );
  }
} finally {
  for (const o of opened) await o.stop();
  await stopAll();
}
