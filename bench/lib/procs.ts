/**
 * Processes the benchmark starts (proxies, HTTP upstreams) and what /proc says about them.
 * Every process spawned here is tracked; `stopAll()` stops whatever is still running.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { freePort } from '../../test/helpers/processes.js';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PROXY_MAIN = `${ROOT}dist/main.js`;
export const EVERYTHING_MAIN = `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
export const LEAN_MAIN = `${ROOT}bench/lean-server.mjs`;
export const FAULTY_MAIN = `${ROOT}test/fixtures/faulty-server.ts`;
/** Lifts the per-client limits (bench/proxy.yaml). */
const BENCH_CONFIG = `${ROOT}bench/proxy.yaml`;

export interface Running {
  proc: ChildProcess;
  pid: number;
  url: string;
  /** The last lines the process wrote to stderr (for error messages). */
  tail(): string;
  stop(): Promise<void>;
}

const live = new Set<Running>();

/** Quotes argv into the single command line `--upstream` takes. */
export function commandLine(argv: string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/**
 * Spawns a process and resolves once `pattern` shows up on `stream` (the match's group 1 is the
 * URL, unless `url` is given). Both output streams are drained for the process's whole life.
 */
async function startAndWait(
  argv: string[],
  env: NodeJS.ProcessEnv,
  stream: 'stdout' | 'stderr',
  pattern: RegExp,
  what: string,
  url?: string,
): Promise<Running> {
  const proc = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  let seen = '';
  let waiting = true;
  const keep = (d: Buffer) => {
    tail = (tail + d.toString()).slice(-4000);
    if (waiting) seen += d.toString();
  };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
      proc.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      proc.kill('SIGTERM');
    });
  const running: Running = {
    proc,
    pid: proc.pid ?? -1,
    url: url ?? '',
    tail: () => tail,
    stop: async () => {
      await stop();
      live.delete(running);
    },
  };
  live.add(running);
  proc.once('exit', () => live.delete(running));
  try {
    const m = await new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} did not start within 20 s:\n${seen}`)), 20_000);
      const check = () => {
        const found = seen.match(pattern);
        if (!found) return;
        clearTimeout(timer);
        proc[stream].off('data', check);
        resolve(found);
      };
      proc[stream].on('data', check);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${what} exited with ${code} before starting:\n${seen}`));
      });
    });
    waiting = false;
    seen = '';
    if (!url) running.url = m[1];
    return running;
  } catch (err) {
    await running.stop();
    throw err;
  }
}

/** node flags that write a CPU profile (sampled every 200 µs) into `dir` at exit. */
function profFlags(dir: string | undefined): string[] {
  return dir ? ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', dir] : [];
}

/** The proxy CLI with an HTTP front (`main`: another build of it); resolves once it logs its URL. */
export function startProxy(upstreamArg: string, profileDir?: string, env: NodeJS.ProcessEnv = {}, main = PROXY_MAIN): Promise<Running> {
  return startProxyWith(['--upstream', upstreamArg], profileDir, env, main);
}

/** The proxy CLI with an HTTP front and these arguments after the bench's own (e.g. several `--upstream NAME=SPEC`). */
export function startProxyWith(args: string[], profileDir?: string, env: NodeJS.ProcessEnv = {}, main = PROXY_MAIN): Promise<Running> {
  return startAndWait(
    [process.execPath, ...profFlags(profileDir), main, '--port', '0', '--config', BENCH_CONFIG, ...args],
    env,
    'stderr',
    /"url":"(http:[^"]+)"/,
    'proxy',
  );
}

/** argv of the proxy's stdio front (for an SDK StdioClientTransport). */
export function proxyStdioArgv(upstreamArg: string, profileDir?: string): string[] {
  return [
    process.execPath,
    ...profFlags(profileDir),
    PROXY_MAIN,
    '--stdio',
    '--config',
    BENCH_CONFIG,
    '--log-level',
    'warn',
    '--upstream',
    upstreamArg,
  ];
}

/** The gateways the proxy is compared with, each in front of a stdio server, with their default features. */
export type Peer = 'bare-relay' | 'fastify-relay' | 'mcp-proxy' | 'supergateway';

export async function startPeer(peer: Peer, stdioArgv: string[]): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  switch (peer) {
    case 'bare-relay':
    case 'fastify-relay':
      return startAndWait(
        [process.execPath, `${ROOT}bench/${peer}.mjs`, '--port', String(port), '--', ...stdioArgv],
        {},
        'stdout',
        /LISTENING (http:\S+)/,
        peer,
      );
    case 'mcp-proxy':
      return listening(
        await startAndWait(
          [
            process.execPath,
            `${ROOT}node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs`,
            '--port',
            String(port),
            '--host',
            '127.0.0.1',
            '--',
            ...stdioArgv,
          ],
          {},
          'stdout',
          /starting server on port/,
          peer,
          url,
        ),
        port,
      );
    case 'supergateway':
      return listening(
        await startAndWait(
          [
            process.execPath,
            `${ROOT}node_modules/supergateway/dist/index.js`,
            '--stdio',
            commandLine(stdioArgv),
            '--outputTransport',
            'streamableHttp',
            '--stateful',
            '--port',
            String(port),
            '--logLevel',
            'info',
          ],
          {},
          'stdout',
          /Listening on port/,
          peer,
          url,
        ),
        port,
      );
  }
}

/** Resolves once something accepts connections on the port (at most 20 s). */
async function listening(r: Running, port: number): Promise<Running> {
  const until = Date.now() + 20_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => (socket.end(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (open) return r;
    if (Date.now() > until) throw new Error(`${r.pid} is not listening on port ${port} after 20 s:\n${r.tail()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function startLeanHttp(sse = false): Promise<Running> {
  return startAndWait(
    [process.execPath, LEAN_MAIN, '--http', '--port', '0', ...(sse ? ['--sse'] : [])],
    {},
    'stdout',
    /LISTENING (http:\S+)/,
    'lean-server',
  );
}

export function startFaultyHttp(): Promise<Running> {
  return startAndWait(
    [process.execPath, '--import', 'tsx', FAULTY_MAIN, '--http', '--port', '0'],
    {},
    'stdout',
    /LISTENING (http:\S+)/,
    'faulty-server',
  );
}

/** The 2026-07-28-only fixture (v2 SDK, `legacy: 'reject'`) over Streamable HTTP. */
export function startModernHttp(): Promise<Running> {
  return startAndWait(
    [process.execPath, '--import', 'tsx', `${ROOT}test/fixtures/modern-server.ts`, '--http', '--port', '0'],
    {},
    'stdout',
    /LISTENING (http:\S+)/,
    'modern-server',
  );
}

/** bench/bare-http-proxy.mjs in front of `url`: the floor for a proxy in front of an HTTP server. */
export function startBareHttpProxy(url: string, stack: 'node-http' | 'fastify' = 'node-http'): Promise<Running> {
  const [file, name] = stack === 'fastify' ? ['fastify-http-proxy.mjs', 'fastify-http-proxy'] : ['bare-http-proxy.mjs', 'bare-http-proxy'];
  return startAndWait([process.execPath, `${ROOT}bench/${file}`, url], {}, 'stdout', /LISTENING (http:\S+)/, name);
}

/** server-everything's Streamable HTTP transport (it logs every request on stdout: drained). */
export async function startEverythingHttp(): Promise<Running> {
  const port = await freePort();
  return startAndWait(
    [process.execPath, EVERYTHING_MAIN, 'streamableHttp'],
    { PORT: String(port) },
    'stderr',
    /listening on port/i,
    'server-everything',
    `http://127.0.0.1:${port}/mcp`,
  );
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((r) => r.stop()));
}

/** Last resort at exit: SIGKILL what is still tracked (its own children may survive). */
export function killAllNow(): void {
  for (const r of live) {
    try {
      r.proc.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
}

// ---- /proc ---------------------------------------------------------------------------------

export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** [utime, stime] of one process, in clock ticks (all its threads; children not included). */
export function cpuTimes(pid: number): [number, number] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) may contain spaces and parentheses: fields are counted after the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime is field 14, stime field 15.
  return [Number(rest[11]), Number(rest[12])];
}

/**
 * CPU time of one process in nanoseconds: each of its threads' time on a CPU (/proc/<pid>/task/<tid>/schedstat),
 * summed. Exact where utime+stime counts clock ticks (10 ms), so short batches can be measured; time of threads
 * that have exited is not in it (node's threads live as long as the process).
 */
export function cpuNs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
    } catch {
      /* the thread exited */
    }
  }
  return ns;
}

/** Summed [utime, stime] ticks over pids that are still alive. */
export function cpuTimesOf(pids: number[]): [number, number] {
  const sum: [number, number] = [0, 0];
  for (const pid of pids) {
    try {
      const [u, s] = cpuTimes(pid);
      sum[0] += u;
      sum[1] += s;
    } catch {
      /* exited */
    }
  }
  return sum;
}

/** Machine-wide CPU ticks from /proc/stat: busy (not idle/iowait) and steal (taken by the hypervisor). */
export function machineTicks(): { busy: number; steal: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user)
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return { busy: user + nice + system + irq + softirq, steal: steal || 0 };
}

/** Resident set size in KiB (VmRSS). */
export function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = status.match(/^VmRSS:\s+(\d+)\s+kB/m);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]);
}

/** Direct children of a process (from /proc/<pid>/task/<tid>/children, or by scanning ppids). */
export function childPids(pid: number): number[] {
  const out = new Set<number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      for (const p of text.split(/\s+/)) if (p) out.add(Number(p));
    }
    return [...out];
  } catch {
    /* no children files: scan */
  }
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.add(Number(entry));
    } catch {
      /* raced with an exit */
    }
  }
  return [...out];
}

export function cpuModel(): string {
  try {
    const m = readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.+)$/m);
    return m ? m[1].trim() : 'unknown';
  } catch {
    return 'unknown';
  }
}
