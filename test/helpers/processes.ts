/**
 * Test helpers that start real processes: the built proxy CLI and upstream servers in HTTP mode.
 * Every process started here is registered and killed by `stopAll()` (call it in afterAll).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PROXY_MAIN = `${ROOT}dist/main.js`;
export const EVERYTHING_MAIN = `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
const TSX = ['--import', 'tsx'];

/** The virtual environment's Python, with the Python MCP software the tests use (test/python/setup.sh makes it; `npm test` runs that). */
export const PYTHON = `${ROOT}.venv/bin/python`;

/** argv that runs a fixture from test/fixtures: TypeScript by its name, JavaScript and Python by their file names (`name.mjs`, `python/name.py`). */
export function fixtureArgv(name: string, ...args: string[]): string[] {
  if (name.endsWith('.mjs')) return [process.execPath, `${ROOT}test/fixtures/${name}`, ...args];
  if (name.endsWith('.py')) {
    if (!existsSync(PYTHON))
      throw new Error(`${PYTHON} is missing: run sh test/python/setup.sh (npm test does) to install the Python test servers`);
    return [PYTHON, `${ROOT}test/fixtures/${name}`, ...args];
  }
  // Bundled by the end-to-end projects' global setup (test/helpers/build-fixtures.ts); tsx when run otherwise.
  if (process.env.TEST_FIXTURES_BUILT) return [process.execPath, `${ROOT}test/fixtures/.built/${name}.mjs`, ...args];
  return [process.execPath, ...TSX, `${ROOT}test/fixtures/${name}.ts`, ...args];
}
export const EVERYTHING_STDIO = [process.execPath, EVERYTHING_MAIN, 'stdio'];

/** Quotes argv into the single command line `--upstream` takes. */
export function commandLine(argv: string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** Every process started here that is still running, with its stop function. */
const live = new Map<ChildProcess, Running['stop']>();

export interface Running {
  proc: ChildProcess;
  url: string;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function track(proc: ChildProcess): { stderr: () => string; stop: Running['stop'] } {
  let err = '';
  proc.stderr?.on('data', (d) => (err += d.toString()));
  proc.once('exit', () => live.delete(proc));
  const stop: Running['stop'] = (signal = 'SIGTERM') =>
    new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
      proc.once('exit', (code) => resolve(code));
      proc.kill(signal);
      setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
    });
  live.set(proc, stop);
  return { stderr: () => err, stop };
}

/** Waits until `pattern` matches the text a stream has produced; rejects after `ms`. */
function waitFor(proc: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp, ms: number, what: string): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => done(new Error(`${what} did not start within ${ms} ms:\n${seen}`)), ms);
    const onData = (d: Buffer) => {
      seen += d.toString();
      const m = seen.match(pattern);
      if (m) done(undefined, m);
    };
    const onExit = (code: number | null) => done(new Error(`${what} exited with ${code} before starting:\n${seen}`));
    function done(err?: Error, m?: RegExpMatchArray) {
      clearTimeout(timer);
      proc[stream]!.off('data', onData);
      proc.off('exit', onExit);
      if (err) reject(err);
      else resolve(m!);
    }
    proc[stream]!.on('data', onData);
    proc.once('exit', onExit);
  });
}

/** Starts the proxy CLI on a free port; resolves once it logs its URL. */
export async function startProxy(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  const proc = spawn(process.execPath, [PROXY_MAIN, '--port', '0', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const t = track(proc);
  const m = await waitFor(proc, 'stderr', /"url":"(http:[^"]+)"/, 15_000, 'proxy');
  return { proc, url: m[1], ...t };
}

/** Starts a fixture server in Streamable HTTP mode (it prints `LISTENING <url>`). */
export async function startHttpFixture(name: string, env: NodeJS.ProcessEnv = {}, extraArgs: string[] = []): Promise<Running> {
  const [cmd, ...args] = fixtureArgv(name, '--http', '--port', '0', ...extraArgs);
  const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const t = track(proc);
  const m = await waitFor(proc, 'stdout', /LISTENING (http:\S+)/, 20_000, name);
  return { proc, url: m[1], ...t };
}

/**
 * Starts server-everything's Streamable HTTP transport. It cannot bind port 0 and say which
 * port it got, so a free port is picked and, should another process take it first, the start is
 * tried again on another one.
 */
export async function startEverythingHttp(): Promise<Running> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const proc = spawn(process.execPath, [EVERYTHING_MAIN, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const t = track(proc);
    try {
      await waitFor(proc, 'stderr', /listening on port/i, 20_000, 'server-everything');
      return { proc, url: `http://127.0.0.1:${port}/mcp`, ...t };
    } catch (err) {
      if (attempt >= 5 || !/already in use/.test((err as Error).message)) throw err;
    }
  }
}

/** A port nothing listens on right now (for "connection refused"; never bind it later: that races). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live.values()].map((stop) => stop()));
}

/** Is a process (by pid) still alive? */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The JSON lines of a file another process appends to: only complete lines, so a line still
 * being written is never parsed half-way.
 */
export function jsonLines<T = any>(file: string): T[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);
}

/**
 * Resolves once the faulty fixture (FAULTY_LOG=`file`) has logged a `started` line for the
 * request (by id, or by tool name when the client picks the id): the call is in flight.
 */
export function callStarted(file: string, request: number | { tool: string }, ms = 10_000): Promise<void> {
  const match = (l: { started?: number; tool?: string }) => (typeof request === 'number' ? l.started === request : l.tool === request.tool);
  return eventually(() => jsonLines(file).some(match), ms, `call ${JSON.stringify(request)} started upstream`);
}

/** The JSON log entries a process wrote to stderr: complete lines only, other lines skipped. */
export function logEntries(proc: Pick<Running, 'stderr'>): any[] {
  const text = proc.stderr();
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return [];
      }
    });
}

/** Resolves once the process has logged an entry that `match` accepts; throws after `ms`. */
export function logged(proc: Pick<Running, 'stderr'>, match: (entry: any) => boolean, ms = 5000, what = 'the log entry'): Promise<void> {
  return eventually(() => logEntries(proc).some(match), ms, what);
}

/** The cancellations the faulty fixture (FAULTY_LOG=`file`) has logged. */
export function cancellations(file: string): Array<{ cancelled: number; reason: string }> {
  return jsonLines<{ cancelled?: number; reason: string }>(file).filter(
    (l): l is { cancelled: number; reason: string } => l.cancelled !== undefined,
  );
}

/** Polls `check` every 50 ms until it is true; throws after `ms`. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not hold within ${ms} ms`);
}
