/**
 * Failure behaviour with real processes: an upstream that crashes, hangs, prints garbage or
 * cannot start; clients that send bad JSON, oversized bodies, wrong sessions or headers, or go
 * away. Each case has a defined answer, nothing hangs, and no child outlives its session.
 */
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { callTool, INIT, openGetStream, postWithHost, rawPost, rawSession } from '../helpers/raw.js';
import {
  callStarted,
  cancellations,
  commandLine,
  eventually,
  fixtureArgv,
  freePort,
  isAlive,
  logged,
  PROXY_MAIN,
  startHttpFixture,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { lineSplitter } from '../../src/jsonrpc/lines.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-failures-'));
const cancelLog = join(dir, 'cancel.log');
const FAULTY = commandLine(fixtureArgv('faulty-server'));

function writeConfig(name: string, yaml: string): string {
  const file = join(dir, name);
  writeFileSync(file, yaml);
  return file;
}

const cancelled = () => cancellations(cancelLog);

async function toolText(url: string, headers: Record<string, string>, id: number, name: string, args = {}): Promise<string> {
  const reply = await rawPost(url, callTool(id, name, args), headers);
  return reply.messages.at(-1)?.result?.content?.[0]?.text;
}

describe('an HTTP-front proxy in front of a faulty stdio upstream', () => {
  let proxy: Running;
  let url: string;

  beforeAll(async () => {
    const config = writeConfig(
      'faulty.yaml',
      [
        'upstream:',
        `  command: ${JSON.stringify(FAULTY)}`,
        '  env:',
        `    FAULTY_LOG: ${JSON.stringify(cancelLog)}`,
        'listen:',
        '  maxBodyBytes: 4096',
        'timeouts:',
        '  requestMs: 800',
        '  sessionIdleMs: 2500', // short for the idle test, long enough for a loaded machine
        '  shutdownGraceMs: 500',
      ].join('\n'),
    );
    proxy = await startProxy(['--config', config]);
    url = proxy.url;
  });
  afterAll(stopAll);

  it('answers every pending request when the upstream exits mid-call, ends the session, and serves new ones', async () => {
    const headers = await rawSession(url);
    const hanging = rawPost(url, callTool(1, 'hang'), headers);
    await callStarted(cancelLog, 1);
    const crashed = await rawPost(url, callTool(2, 'crash'), headers);
    expect(crashed.messages).toEqual([
      {
        jsonrpc: '2.0',
        id: 2,
        error: {
          code: -32000,
          message: 'Upstream process exited with code 3',
          data: { code: 'UPSTREAM_CLOSED', exitCode: 3, signal: null },
        },
      },
    ]);
    expect((await hanging).messages[0].error.data.code).toBe('UPSTREAM_CLOSED');
    expect((await rawPost(url, callTool(3, 'echo', { text: 'x' }), headers)).status).toBe(404);
    const fresh = await rawSession(url);
    expect(await toolText(url, fresh, 4, 'echo', { text: 'new session' })).toBe('new session');
    await eventually(() => proxy.stderr().includes('crashing'), 5000, 'the upstream stderr tail in the log');
  });

  it("forgets a request the client cancelled, and ends that request's stream", async () => {
    const headers = await rawSession(url);
    const hanging = rawPost(url, callTool(21, 'hang'), headers);
    await callStarted(cancelLog, 21);
    await rawPost(
      url,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 21, reason: 'user pressed stop' } },
      headers,
    );
    expect((await hanging).messages).toEqual([]); // no answer for a cancelled request, not even a timeout later
    await eventually(() => cancelled().some((c) => c.cancelled === 21 && c.reason === 'user pressed stop'), 5000, 'upstream cancellation');
  });

  it('times out a hanging request, cancels it upstream, and keeps the session', async () => {
    const headers = await rawSession(url);
    const reply = await rawPost(url, callTool(7, 'hang'), headers);
    expect(reply.messages[0]).toMatchObject({ id: 7, error: { code: -32001, data: { code: 'REQUEST_TIMEOUT', timeoutMs: 800 } } });
    await eventually(() => cancelled().some((c) => c.cancelled === 7 && /timed out/.test(c.reason)), 5000, 'upstream cancellation');
    expect(await toolText(url, headers, 8, 'echo', { text: 'alive' })).toBe('alive');
  });

  it('skips non-JSON lines from the upstream and logs them', async () => {
    const headers = await rawSession(url);
    expect(await toolText(url, headers, 1, 'garbage')).toBe('after garbage');
    await eventually(() => proxy.stderr().includes('not JSON-RPC'), 5000, 'a warning in the log');
  });

  it('rejects malformed JSON (-32700), invalid requests (-32600) and oversized bodies (413)', async () => {
    const headers = await rawSession(url);
    const bad = await rawPost(url, '{"jsonrpc":"2.0",', headers);
    expect(bad.status).toBe(400);
    expect(bad.messages[0]).toMatchObject({ id: null, error: { code: -32700 } });
    const invalid = await rawPost(url, { jsonrpc: '2.0', id: 5, method: 42 }, headers);
    expect(invalid.messages[0]).toMatchObject({ id: 5, error: { code: -32600 } });
    expect((await rawPost(url, { jsonrpc: '1.0', id: 6, method: 'ping' }, headers)).messages[0]).toMatchObject({
      id: 6,
      error: { code: -32600 },
    });
    // What JSON-RPC allows but MCP servers drop without an answer is refused at once, not left to time out.
    for (const [message, why] of [
      [{ jsonrpc: '2.0', id: 11, method: 'tools/list', extra: true }, 'unknown member "extra"'],
      [{ jsonrpc: '2.0', id: 1.5, method: 'ping' }, 'an integer'],
      [{ jsonrpc: '2.0', id: 12, method: 'tools/list', params: [] }, 'must be an object'],
      [{ jsonrpc: '2.0', id: 13, method: 'ping', params: null }, 'must be an object'],
    ] as const) {
      const refused = await rawPost(url, message, headers);
      expect(refused.messages[0]).toMatchObject({ id: message.id, error: { code: -32600, message: expect.stringContaining(why) } });
    }
    const big = await rawPost(url, callTool(9, 'echo', { text: 'x'.repeat(10_000) }), headers);
    expect(big.status).toBe(413);
    expect(big.messages[0].error.message).toContain('4096 bytes');
    expect(await toolText(url, headers, 10, 'echo', { text: 'fine' })).toBe('fine');
    // The same id twice while the first is in flight: the duplicate is refused, the first completes.
    const first = rawPost(url, callTool(50, 'slow_progress', { steps: 1, delayMs: 600 }), headers);
    await callStarted(cancelLog, 50);
    expect((await rawPost(url, callTool(50, 'echo', { text: 'dup' }), headers)).messages[0]).toMatchObject({
      id: 50,
      error: { code: -32600, data: { code: 'DUPLICATE_ID' } },
    });
    expect((await first).messages.at(-1)).toMatchObject({ id: 50, result: { content: [{ text: 'done 1' }] } });
  });

  it('answers in JSON when the client accepts only JSON, and answers batches in one array', async () => {
    const headers = await rawSession(url);
    const json = await rawPost(url, callTool(1, 'echo', { text: 'plain' }), { ...headers, accept: 'application/json' });
    expect(json.headers.get('content-type')).toContain('application/json');
    expect(json.messages).toEqual([{ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'plain' }] } }]);
    const batch = await rawPost(url, [callTool(2, 'echo', { text: 'a' }), callTool(3, 'echo', { text: 'b' })], {
      ...headers,
      accept: 'application/json',
    });
    expect(batch.messages.map((m) => [m.id, m.result.content[0].text]).sort()).toEqual([
      [2, 'a'],
      [3, 'b'],
    ]);
  });

  it('checks sessions, protocol versions and Accept headers', async () => {
    const headers = await rawSession(url);
    expect((await rawPost(url, callTool(1, 'echo'), {})).status).toBe(400);
    expect((await rawPost(url, callTool(1, 'echo'), { 'mcp-session-id': 'nope' })).status).toBe(404);
    expect((await rawPost(url, callTool(1, 'echo'), { ...headers, 'mcp-protocol-version': '1999-01-01' })).status).toBe(400);
    expect((await rawPost(url, INIT, headers)).status).toBe(400); // already initialized
    expect((await fetch(url, { headers: { ...headers, accept: 'application/json' } })).status).toBe(406);
    // A second GET stream (a client reconnecting) replaces the first, which ends.
    const first = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
    expect(first.status).toBe(200);
    const second = new AbortController();
    expect((await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: second.signal })).status).toBe(200);
    expect(await first.text()).toBe('');
    second.abort();
  });

  it('refuses foreign Origin and Host headers (DNS rebinding) and accepts local ones', async () => {
    expect((await rawPost(url, INIT, { origin: 'http://evil.example' })).status).toBe(403);
    expect(await postWithHost(url, 'evil.example', INIT)).toBe(403);
    expect(await postWithHost(url, 'evil.example:80', INIT)).toBe(403);
    const ok = await rawPost(url, INIT, { origin: 'http://localhost:5173' });
    expect(ok.status).toBe(200);
    await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': ok.headers.get('mcp-session-id')! } });
  });

  it('cancels upstream work when the client closes the response stream', async () => {
    // A client before 2025-11-25 cannot resume a stream (resumable-streams.test.ts: later ones after a window).
    const headers = { ...(await rawSession(url)), 'mcp-protocol-version': '2025-06-18' };
    const abort = new AbortController();
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(callTool(31, 'hang')),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    abort.abort();
    await eventually(
      () => cancelled().some((c) => c.cancelled === 31 && /closed the response stream/.test(c.reason)),
      5000,
      'upstream cancellation',
    );
  });

  it('reaps the child when the client ends the session, and when the session idles', async () => {
    const a = await rawSession(url);
    const pidA = Number(await toolText(url, a, 1, 'pid'));
    expect(isAlive(pidA)).toBe(true);
    expect((await fetch(url, { method: 'DELETE', headers: a })).status).toBe(200);
    await eventually(() => !isAlive(pidA), 5000, 'child reaped after DELETE');
    expect((await rawPost(url, callTool(2, 'echo'), a)).status).toBe(404);

    const b = await rawSession(url);
    const pidB = Number(await toolText(url, b, 1, 'pid'));
    await eventually(() => !isAlive(pidB), 15_000, 'idle child reaped');
    expect((await rawPost(url, callTool(2, 'echo'), b)).status).toBe(404);
  });
});

describe('the session limit', () => {
  afterAll(stopAll);

  it('refuses initialize beyond listen.maxSessions with 503 when no session is idle, and admits again once a session ends', async () => {
    const proxy = await startProxy([
      '--config',
      writeConfig('limit.yaml', `upstream:\n  command: ${JSON.stringify(FAULTY)}\nlisten:\n  maxSessions: 1\n`),
    ]);
    const first = await rawSession(proxy.url);
    // Its open GET stream keeps the session from being ended to make room.
    expect((await openGetStream(proxy.url, first)).status).toBe(200);
    const refused = await rawPost(proxy.url, INIT);
    expect(refused.status).toBe(503);
    expect(refused.messages[0].error.message).toContain('limit 1');
    await fetch(proxy.url, { method: 'DELETE', headers: first });
    expect((await rawPost(proxy.url, INIT)).status).toBe(200);
  });
});

describe('batches', () => {
  afterAll(stopAll);

  it('refuses a batch over listen.maxBatchSize whole and at once (80,000 pings), while other sessions are served; a batch at the limit runs', async () => {
    const proxy = await startProxy(['--upstream', FAULTY]);
    const [flooder, other] = [await rawSession(proxy.url), await rawSession(proxy.url)];
    const pings = (n: number) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' }));
    const [huge, meanwhile] = await Promise.all([
      rawPost(proxy.url, pings(80_000), flooder),
      toolText(proxy.url, other, 1, 'echo', { text: 'still here' }),
    ]);
    expect(huge.status).toBe(400);
    expect(huge.messages[0]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(huge.messages[0].error.message).toContain('80000 messages is more than the 100');
    expect(meanwhile).toBe('still here');
    const full = await rawPost(proxy.url, pings(100), flooder);
    expect(
      full.messages
        .flat()
        .map((m: { id: number }) => m.id)
        .sort((a: number, b: number) => a - b),
    ).toEqual(pings(100).map((p) => p.id));
  });
});

describe('oversized bodies from a real client', () => {
  afterAll(stopAll);

  it('answers 413 to fetch posting 32 MB, with a length and streamed in slow chunks, and keeps serving', async () => {
    const proxy = await startProxy(['--upstream', FAULTY]);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const prefix = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"';
    const sized = await fetch(proxy.url, { method: 'POST', headers, body: `${prefix}${'a'.repeat(32 * 1024 * 1024)}"}}` });
    expect(sized.status).toBe(413);
    expect((await sized.json()).error.data.code).toBe('BODY_TOO_LARGE');
    const chunk = new TextEncoder().encode('a'.repeat(256 * 1024));
    let sent = 0;
    const body = new ReadableStream({
      async pull(c) {
        if (sent === 0) c.enqueue(new TextEncoder().encode(prefix));
        await new Promise((r) => setImmediate(r));
        if (sent++ < 128) c.enqueue(chunk);
        else c.close();
      },
    });
    const streamed = await fetch(proxy.url, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
    expect((await rawPost(proxy.url, INIT)).status).toBe(200);
  });
});

describe('clients that stop reading', () => {
  afterAll(stopAll);

  /** A POST on a raw socket whose reader never reads a byte of the answer. */
  function stalledPost(url: string, body: unknown, headers: Record<string, string>): Socket {
    const u = new URL(url);
    const socket = connect(Number(u.port), u.hostname);
    socket.pause();
    const payload = JSON.stringify(body);
    const lines = Object.entries({
      host: u.host,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': String(Buffer.byteLength(payload)),
      ...headers,
    });
    socket.write(`POST ${u.pathname} HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${payload}`);
    return socket;
  }

  it('closes a stream with more than maxUnreadBytes unread, and one whose client reads nothing for stallMs; other sessions are served', async () => {
    const config = writeConfig(
      'slow-readers.yaml',
      `upstream:\n  command: ${JSON.stringify(FAULTY)}\nlisten:\n  slowReaders: { maxUnreadBytes: 1048576, stallMs: 1000 }\n`,
    );
    const proxy = await startProxy(['--config', config]);
    const sockets: Socket[] = [];
    // Three clients that never read a call streaming 10 MB of notifications at them.
    for (let i = 0; i < 3; i++)
      sockets.push(stalledPost(proxy.url, callTool(1, 'flood', { count: 80, bytes: 128 * 1024 }), await rawSession(proxy.url)));
    // One that never reads a single 20 MB answer: nothing to refuse, but nothing read either.
    sockets.push(
      stalledPost(proxy.url, callTool(1, 'flood', { count: 0, bytes: 0, resultBytes: 20 * 1024 * 1024 }), await rawSession(proxy.url)),
    );
    const other = await rawSession(proxy.url);
    expect(await toolText(proxy.url, other, 2, 'echo', { text: 'unaffected' })).toBe('unaffected');
    const warnings = () =>
      proxy
        .stderr()
        .split('\n')
        .filter((l) => l.includes('client is not reading its response stream'));
    await eventually(() => warnings().length >= 4, 30_000, 'four slow readers cut off');
    expect(warnings().filter((l) => l.includes('maxUnreadBytes')).length).toBeGreaterThanOrEqual(3);
    expect(warnings().some((l) => l.includes('read nothing'))).toBe(true);
    expect(await toolText(proxy.url, other, 3, 'echo', { text: 'still unaffected' })).toBe('still unaffected');
    for (const s of sockets) s.destroy();
  }, 60_000);

  it('lets a client that reads take answers larger than maxUnreadBytes, one after another', async () => {
    const config = writeConfig(
      'big-readers.yaml',
      `upstream:\n  command: ${JSON.stringify(FAULTY)}\nlisten:\n  slowReaders: { maxUnreadBytes: 1048576, stallMs: 1000 }\n`,
    );
    const proxy = await startProxy(['--config', config]);
    const headers = await rawSession(proxy.url);
    const big = (id: number) => callTool(id, 'flood', { count: 0, bytes: 0, resultBytes: 12 * 1024 * 1024 });
    const reply = await rawPost(proxy.url, [big(1), big(2)], headers); // a batch: one SSE stream, two 12 MB events
    expect(
      reply.messages
        .flat()
        .map((m: { id: number; result: { content: Array<{ text: string }> } }) => [m.id, m.result.content[0].text.length]),
    ).toEqual([
      [1, 12 * 1024 * 1024 + 'flooded 0'.length],
      [2, 12 * 1024 * 1024 + 'flooded 0'.length],
    ]);
    expect(proxy.stderr()).not.toContain('client is not reading');
  }, 60_000);
});

describe('upstream start failures', () => {
  afterAll(stopAll);

  it('answers initialize with an error, logs the cause at start-up and reports not ready when the command cannot start', async () => {
    const proxy = await startProxy(['--upstream', '/nonexistent/mcp-server --flag']);
    const reply = await rawPost(proxy.url, INIT);
    expect(reply.messages[0]).toMatchObject({ id: 0, error: { code: -32000, data: { code: 'UPSTREAM_START_FAILED' } } });
    expect(reply.messages[0].error.message).toContain('ENOENT');
    await logged(
      proxy,
      (e) => e.msg?.startsWith('upstream not ready') || /ENOENT/.test(e.cause ?? ''),
      5000,
      'the start-up check in the log',
    );
    // Alive, but not ready.
    expect((await fetch(proxy.url.replace('/mcp', '/healthz'))).status).toBe(200);
    const ready = await fetch(proxy.url.replace('/mcp', '/readyz'));
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({
      status: 'unready',
      ready: false,
      cause: expect.stringContaining('ENOENT'),
      upstream: { kind: 'stdio' },
    });
  });

  it('names the cause when the upstream dies at start: the end of its stderr, secrets masked', async () => {
    const config = writeConfig(
      'crash.yaml',
      ['upstream:', `  command: ${JSON.stringify(FAULTY)}`, '  env:', '    FAULTY_START: crash'].join('\n'),
    );
    const proxy = await startProxy(['--config', config]);
    const reply = await rawPost(proxy.url, INIT);
    expect(reply.messages[0]).toMatchObject({ id: 0, error: { data: { code: 'UPSTREAM_START_FAILED', exitCode: 2 } } });
    expect(reply.messages[0].error.message).toMatch(/exited with code 2 before it answered; its last output: .*boom.*API_KEY=\*\*\*/);
    expect(reply.messages[0].error.message).not.toContain('sk-live');
    const ready = await (await fetch(proxy.url.replace('/mcp', '/readyz'))).json();
    expect(ready.cause).toContain('boom');
  });

  it('masks secrets in arguments and stderr everywhere they show, and gives probe details only to local or authenticated callers', async () => {
    const TOKEN = 'probe-token-0123456789';
    const config = writeConfig(
      'masked.yaml',
      [
        'upstream:',
        `  command: ${JSON.stringify(`${FAULTY} postgres://app:hunter2@db/x --password pw-arg Server=d;Password=cs-secret;`)}`,
        '  env:',
        '    FAULTY_START: crash',
        'listen:',
        '  trustProxy: ["127.0.0.1"]',
        'auth:',
        '  tokens:',
        `    - { name: ops, sha256: ${hashToken(TOKEN)} }`,
      ].join('\n'),
    );
    const proxy = await startProxy(['--config', config]);
    const secrets = /hunter2|pw-arg|cs-secret|sk-live|wJalrXUtnFEMI|ghp_aaaa/;
    const reply = await rawPost(proxy.url, INIT, { authorization: `Bearer ${TOKEN}` });
    expect(reply.messages[0].error.data.code).toBe('UPSTREAM_START_FAILED');
    expect(reply.messages[0].error.message).toMatch(/aws_secret_access_key = \*\*\*/);
    const probe = async (path: string, headers: Record<string, string>) =>
      (await fetch(proxy.url.replace('/mcp', path), { headers })).text();
    const local = [await probe('/healthz', {}), await probe('/readyz', {})];
    expect(local[0]).toContain('postgres://***@db/x --password ***');
    expect(local[1]).toContain('boom');
    // A caller from elsewhere (as the trusted balancer says) sees the status alone, unless it authenticates.
    const remote = { 'x-forwarded-for': '203.0.113.9' };
    expect(JSON.parse(await probe('/healthz', remote))).toEqual({ status: 'ok' });
    expect(JSON.parse(await probe('/readyz', remote))).toEqual({ status: 'unready', ready: false });
    expect(await probe('/readyz', { ...remote, authorization: `Bearer ${TOKEN}` })).toContain('boom');
    await logged(proxy, (e) => e.msg === 'upstream process exited', 5000, 'the exit logged');
    for (const text of [reply.text, ...local, proxy.stderr()]) expect(text).not.toMatch(secrets);
  });

  it('with --fail-fast, refuses to start when the upstream fails its start-up check', async () => {
    const proc = spawn(process.execPath, [PROXY_MAIN, '--port', '0', '--fail-fast', '--upstream', '/nonexistent/mcp-server'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise((resolve) => proc.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/not usable \(--fail-fast\).*ENOENT/);
  });

  it('reports an HTTP upstream that refuses connections as not ready', async () => {
    const closed = await freePort(); // nothing listens there
    const proxy = await startProxy(['--upstream', `http://127.0.0.1:${closed}/mcp`]);
    const ready = await fetch(proxy.url.replace('/mcp', '/readyz'));
    expect(ready.status).toBe(503);
    expect((await ready.json()).cause).toMatch(/ECONNREFUSED|could not be reached/);
  });
});

describe('shutdown reaps every child', () => {
  afterAll(stopAll);

  it.each(['SIGTERM', 'SIGINT'] as const)('on %s', async (signal) => {
    const proxy = await startProxy(['--upstream', FAULTY]);
    const pids: number[] = [];
    for (let i = 0; i < 2; i++) {
      const headers = await rawSession(proxy.url);
      pids.push(Number(await toolText(proxy.url, headers, 1, 'pid')));
    }
    expect(pids.every(isAlive)).toBe(true);
    expect(await proxy.stop(signal)).toBe(0);
    await eventually(() => pids.every((p) => !isAlive(p)), 5000, 'children reaped');
  });
});

describe('the stdio front', () => {
  /** Starts `--stdio` and returns helpers to write lines and read the replies. */
  function stdioProxy(env: NodeJS.ProcessEnv = {}) {
    const proc = spawn(process.execPath, [PROXY_MAIN, '--stdio', '--upstream', FAULTY], { env: { ...process.env, ...env } });
    const lines: any[] = [];
    proc.stdout.on(
      'data',
      lineSplitter((l) => lines.push(JSON.parse(l))),
    );
    const exited = new Promise<number | null>((r) => proc.once('exit', r));
    return { proc, lines, exited, send: (m: unknown) => proc.stdin.write((typeof m === 'string' ? m : JSON.stringify(m)) + '\n') };
  }

  it('answers garbage with -32700, relays calls, and reaps the child when stdin closes', async () => {
    const p = stdioProxy();
    p.send('not json at all');
    p.send(INIT);
    p.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    p.send(callTool(1, 'pid'));
    await eventually(() => p.lines.length >= 3, 10_000, 'replies');
    expect(p.lines[0]).toMatchObject({ id: null, error: { code: -32700 } });
    p.send(Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: 100 + i, method: 'ping' })));
    await eventually(() => p.lines.length >= 4, 10_000, 'the batch refusal');
    expect(p.lines[3]).toMatchObject({ id: null, error: { code: -32600, message: expect.stringContaining('listen.maxBatchSize') } });
    const pid = Number(p.lines[2].result.content[0].text);
    expect(isAlive(pid)).toBe(true);
    p.proc.stdin.end();
    expect(await p.exited).toBe(0);
    await eventually(() => !isAlive(pid), 5000, 'child reaped');
  });

  it('answers pending requests and exits non-zero when the upstream crashes', async () => {
    const p = stdioProxy();
    p.send(INIT);
    await eventually(() => p.lines.length >= 1, 10_000, 'the initialize answer');
    p.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    p.send(callTool(1, 'hang'));
    p.send(callTool(2, 'crash'));
    expect(await p.exited).toBe(1);
    expect(p.lines.slice(1).map((l) => [l.id, l.error?.data?.code])).toEqual([
      [1, 'UPSTREAM_CLOSED'],
      [2, 'UPSTREAM_CLOSED'],
    ]);
  });
});

describe('a Streamable HTTP upstream that goes away', () => {
  afterAll(stopAll);

  it('answers pending requests when the upstream dies, and ends the session when it comes back without it', async () => {
    const startedLog = join(dir, 'http-started.log');
    let upstream = await startHttpFixture('faulty-server', { FAULTY_LOG: startedLog });
    // Passed through a fault proxy so that the restarted upstream keeps its URL without rebinding the old port.
    const front = await startFaultProxy(Number(new URL(upstream.url).port));
    const proxy = await startProxy(['--upstream', front.url('/mcp')]);
    const headers = await rawSession(proxy.url);
    expect(await toolText(proxy.url, headers, 1, 'echo', { text: 'up' })).toBe('up');
    const hanging = rawPost(proxy.url, callTool(2, 'hang'), headers);
    await callStarted(startedLog, 2);
    await upstream.stop('SIGKILL');
    expect((await hanging).messages[0]).toMatchObject({ id: 2, error: { code: -32000 } });

    upstream = await startHttpFixture('faulty-server'); // a new process: our session is unknown there
    front.retarget(Number(new URL(upstream.url).port));
    const expired = await rawPost(proxy.url, callTool(3, 'echo', { text: 'again' }), headers);
    expect(expired.messages[0]).toMatchObject({ id: 3, error: { data: { code: 'UPSTREAM_SESSION_EXPIRED' } } });
    expect((await rawPost(proxy.url, callTool(4, 'echo'), headers)).status).toBe(404); // the client re-initializes
    const fresh = await rawSession(proxy.url);
    expect(await toolText(proxy.url, fresh, 5, 'echo', { text: 'recovered' })).toBe('recovered');
    await front.close();
  });
});
