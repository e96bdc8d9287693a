/**
 * The upstream's start-up as an operator meets it through the real CLI: a server that throws
 * at start is explained by its error line (masked) wherever the failure shows — the MCP
 * client's error, /readyz and --fail-fast. --fail-fast waits for an upstream that never answers
 * only --fail-fast-timeout, saying so as it waits. A process the proxy stops itself (the start-up check's,
 * an ended session's) is no exit for /healthz to report; one that crashes is.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { callTool, rawPost, rawSession } from '../helpers/raw.js';
import { commandLine, eventually, fixtureArgv, logged, PROXY_MAIN, startProxy, stopAll } from '../helpers/processes.js';

const BROKEN = commandLine(fixtureArgv('broken-start'));
const FAULTY = commandLine(fixtureArgv('faulty-server'));
const LEGACY_KEY = 'legacy-key-0123456789abcdef';
/** The fixture throws `Error: API_KEY is not set (LEGACY_API_KEY=<value> is no longer read)`. */
const THROWING = ['--upstream', BROKEN, '--env', 'BROKEN_START=throw', '--env', `LEGACY_API_KEY=${LEGACY_KEY}`];
const ERROR_LINE = 'Error: API_KEY is not set (LEGACY_API_KEY=*** is no longer read)';

/** Runs the CLI to its exit; resolves with the exit code and everything it wrote to stderr. */
function runToExit(args: string[], onStderr?: (text: string) => void): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [PROXY_MAIN, '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr += d;
    onStderr?.(stderr);
  });
  return new Promise((resolve) => proc.once('exit', (code) => resolve({ code, stderr })));
}

describe('an upstream that throws at start', () => {
  afterAll(stopAll);

  it('is explained by its error line, masked, in the MCP client’s error and in /readyz', async () => {
    const proxy = await startProxy(THROWING);
    const client = new Client({ name: 'start-up-test', version: '1' });
    const failed = await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url))).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failed?.message).toContain(`before it answered: ${ERROR_LINE}`);
    expect(failed?.message).not.toContain(LEGACY_KEY);
    await client.close();

    const ready = await fetch(proxy.url.replace('/mcp', '/readyz'));
    expect(ready.status).toBe(503);
    const body = await ready.text();
    expect(JSON.parse(body).cause).toContain(ERROR_LINE);
    expect(body + proxy.stderr()).not.toContain(LEGACY_KEY);
  });

  it('is explained by its error line, masked, when --fail-fast refuses to start', async () => {
    const { code, stderr } = await runToExit(['--fail-fast', ...THROWING]);
    expect(code).toBe(2);
    const last = stderr.split('\n').find((l) => l.startsWith('mcp-negotiate-proxy: '));
    expect(last).toMatch(
      /^mcp-negotiate-proxy: The upstream .* is not usable \(--fail-fast\): Upstream process exited with code 1 before it answered: /,
    );
    expect(last).toContain(ERROR_LINE);
    expect(stderr).not.toContain(LEGACY_KEY);
  });
});

describe('--fail-fast with an upstream that never answers initialize', () => {
  it('logs its progress while it waits, then exits 2 saying what it waited for', async () => {
    const { code, stderr } = await runToExit([
      '--fail-fast',
      '--fail-fast-timeout',
      '2000',
      '--upstream',
      BROKEN,
      '--env',
      'BROKEN_START=silent',
    ]);
    expect(code).toBe(2);
    const entries = stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    const progress = entries.filter((e) => e.msg?.startsWith('waiting for the upstream'));
    expect(progress[0]).toMatchObject({
      level: 30,
      msg: 'waiting for the upstream to answer initialize (0.5 s of 2 s)…',
      waitedMs: 500,
      limitMs: 2000,
    });
    expect(entries.some((e) => e.msg === 'listening')).toBe(false);
    expect(stderr).toContain(
      'is not usable (--fail-fast): it did not answer initialize within 2 s (--fail-fast-timeout 2000): raise it if the upstream needs longer to start',
    );
  });
});

describe('/healthz on a healthy proxy', () => {
  afterAll(stopAll);

  it('reports no exit for processes the proxy stopped itself, and the exit of one that crashed', async () => {
    const proxy = await startProxy(['--upstream', FAULTY]);
    const health = async () => (await (await fetch(proxy.url.replace('/mcp', '/healthz'))).json()).upstream;
    const reaped = () => eventually(async () => (await health()).processes === 0, 10_000, 'every upstream process reaped');
    await logged(proxy, (e) => e.msg === 'upstream ready', 15_000, 'the start-up check passed');
    await reaped();
    expect(await health()).not.toHaveProperty('lastExit');

    // A session the client ends: the proxy stops its process.
    const headers = await rawSession(proxy.url);
    expect((await fetch(proxy.url, { method: 'DELETE', headers })).status).toBe(200);
    await reaped();
    expect(await health()).not.toHaveProperty('lastExit');

    const crashing = await rawSession(proxy.url);
    await rawPost(proxy.url, callTool(1, 'crash'), crashing);
    await reaped();
    expect((await health()).lastExit).toBe('Upstream process exited with code 3');
  });
});
