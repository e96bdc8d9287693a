/**
 * Connection discipline at the HTTP front, with raw sockets against a real proxy: requests whose
 * headers or bodies trickle in are cut off (408) while long answers are not, early refusals close
 * the connection instead of waiting for a body, requests count toward the in-flight limit before
 * their bodies arrive, and connections beyond the caps are refused and closed.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { callTool, INIT, metricIn, rawPost, rawSession } from '../helpers/raw.js';
import { callStarted, commandLine, eventually, fixtureArgv, startProxy, stopAll, type Running } from '../helpers/processes.js';

const FAULTY = commandLine(fixtureArgv('faulty-server'));
const TOKEN = 'connections-token-0123456789';

/** A config in front of the faulty fixture; `yaml` may go on with more keys of the upstream section. */
function config(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-connections-')), 'proxy.yaml');
  writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\n${yaml}`);
  return file;
}

/** A raw connection to the proxy: what it received, and a promise of its end. */
interface Raw {
  socket: Socket;
  received(): string;
  closed: Promise<void>;
}

function open(url: string): Promise<Raw> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect(Number(port), hostname, () => resolve({ socket, received: () => text, closed }));
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('data', (d) => (text += d.toString()));
    socket.once('error', reject);
  });
}

/** Resolves when `p` settles, or rejects after `ms` with `what` (a bounded wait for an event). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms).unref()),
  ]);
}

/** Writes `bytes` one at a time, `everyMs` apart, until the socket closes or they are all sent. */
function trickle(raw: Raw, bytes: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (raw.socket.destroyed || i >= bytes.length) return clearInterval(timer);
    raw.socket.write(bytes[i++]);
  }, everyMs);
  void raw.closed.then(() => clearInterval(timer)); // closed only resolves (on the socket's close)
}

const postHead = (path: string, length: number, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('timeouts on requests that trickle in', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy([
      '--config',
      config('listen:\n  connections: { headersTimeoutMs: 1000, bodyTimeoutMs: 1000 }\n  perClient: { inFlight: 2 }\n'),
    ]);
  });
  afterAll(stopAll);

  it('answers 408 and closes a connection whose body trickles in', async () => {
    const raw = await open(proxy.url);
    raw.socket.write(postHead('/mcp', 4_000_000));
    trickle(raw, 'x'.repeat(1000), 200);
    await within(raw.closed, 8000, 'the slow upload cut off');
    expect(raw.received()).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes a connection whose headers trickle in', async () => {
    const raw = await open(proxy.url);
    trickle(raw, postHead('/mcp', 10).repeat(20), 200);
    await within(raw.closed, 8000, 'the slow headers cut off');
    expect(raw.received()).toMatch(/^HTTP\/1\.1 408/);
  });

  it('counts a POST toward the in-flight limit while its body is still coming', async () => {
    const slow = await Promise.all([open(proxy.url), open(proxy.url)]);
    for (const raw of slow) raw.socket.write(postHead('/mcp', 100));
    // Both wait for their bodies; the third POST is over the limit of 2 in flight.
    let third = await rawPost(proxy.url, INIT);
    for (let i = 0; third.status !== 429 && i < 20; i++) third = await rawPost(proxy.url, INIT);
    expect(third.status).toBe(429);
    expect(third.messages[0].error.message).toMatch(/in flight: at most 2/);
    for (const raw of slow) raw.socket.destroy();
    await Promise.all(slow.map((r) => r.closed));
  });

  it('gives the in-flight count back for pipelined requests whose connection dies before their turn', async () => {
    const started = join(mkdtempSync(join(tmpdir(), 'proxy-pipelined-')), 'started.log');
    const own = await startProxy([
      '--config',
      config(`  env: { FAULTY_LOG: ${JSON.stringify(started)} }\nlisten:\n  perClient: { inFlight: 2 }\n`),
    ]);
    const headers = await rawSession(own.url);
    const raw = await open(own.url);
    const session = `Mcp-Session-Id: ${headers['mcp-session-id']}\r\nMCP-Protocol-Version: 2025-11-25\r\n`;
    const hang = (id: number) => {
      const body = JSON.stringify(callTool(id, 'hang'));
      return postHead('/mcp', Buffer.byteLength(body), session) + body;
    };
    raw.socket.write(hang(201) + hang(202) + hang(203) + hang(204));
    // Both slots are taken by the first two pipelined calls (the third is refused, its answer queued behind theirs).
    await callStarted(started, 201);
    await callStarted(started, 202);
    expect((await rawPost(own.url, callTool(205, 'echo', { text: 'x' }), headers)).status).toBe(429);
    raw.socket.resetAndDestroy();
    await raw.closed;
    await eventually(
      async () => (await rawPost(own.url, callTool(300, 'echo', { text: 'back' }), headers)).status === 200,
      // Bounded wait for an event: a loaded machine takes seconds to see the reset and let the calls go.
      15_000,
      'the slots given back',
    );
  });

  it('lets an answer take longer than the request timeouts', async () => {
    const headers = await rawSession(proxy.url);
    const reply = await rawPost(proxy.url, callTool(1, 'slow_progress', { steps: 5, delayMs: 700 }), headers);
    expect(reply.status).toBe(200);
    expect(reply.messages.at(-1).result).toBeDefined();
  });
});

describe('early refusals', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--config', config(`auth:\n  tokens:\n    - { name: ops, sha256: ${hashToken(TOKEN)} }\n`)]);
  });
  afterAll(stopAll);

  it('close the connection instead of waiting for a body they will not read', async () => {
    const raw = await open(proxy.url);
    raw.socket.write(postHead('/mcp', 4_000_000));
    trickle(raw, 'x'.repeat(100), 1000);
    await within(raw.closed, 5000, 'the refused connection closed');
    expect(raw.received()).toMatch(/^HTTP\/1\.1 401/);
    expect(raw.received().toLowerCase()).toContain('connection: close');
  });
});

describe('connection caps', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--config', config('listen:\n  connections: { max: 30, perAddress: 10 }\n')]);
  });
  afterAll(stopAll);

  it('refuses connections beyond the per-address cap with 429, closes those that send nothing, and serves again once below it', async () => {
    const held = await Promise.all(Array.from({ length: 10 }, () => open(proxy.url)));
    const extra = await Promise.all(Array.from({ length: 5 }, () => open(proxy.url)));
    // The first of the extra ones asks: refused at once, the connection closed with the answer.
    extra[0].socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await within(extra[0].closed, 5000, 'the refusal');
    expect(extra[0].received()).toMatch(/^HTTP\/1\.1 429/);
    expect(extra[0].received()).toMatch(/listen\.connections\.perAddress/);
    // The others said nothing: the proxy closes them itself.
    await within(Promise.all(extra.map((r) => r.closed)), 8000, 'the silent extra connections closed');
    expect(await refusalsVia(held[0], 'per_address')).toBeGreaterThanOrEqual(5);
    for (const raw of held) raw.socket.destroy();
    await Promise.all(held.map((r) => r.closed));
    await eventually(async () => (await fetch(new URL('/healthz', proxy.url))).status === 200, 5000, 'served below the cap');
  });

  it('refuses connections beyond the total cap with 503', async () => {
    const { url: wide } = await startProxy(['--config', config('listen:\n  connections: { max: 5, perAddress: 100 }\n')]);
    const held = await Promise.all(Array.from({ length: 5 }, () => open(wide)));
    const over = await open(wide);
    over.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await within(over.closed, 5000, 'the refusal');
    expect(over.received()).toMatch(/^HTTP\/1\.1 503/);
    expect(over.received().toLowerCase()).toMatch(/retry-after: \d+/);
    for (const raw of held) raw.socket.destroy();
    await Promise.all(held.map((r) => r.closed));
    // Served again once the proxy has seen them close.
    await eventually(async () => (await fetch(new URL('/healthz', wide))).status === 200, 5000, 'served below the cap');
  });
});

/** Refusals counted for `reason`, scraped over a connection already held (a new one would be refused). */
async function refusalsVia(raw: Raw, reason: string): Promise<number> {
  const before = raw.received().length;
  const series = `mcp_proxy_refusals_total{reason="${reason}"}`;
  raw.socket.write(`GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  await within(
    new Promise<void>((resolve) => {
      const check = () => (raw.received().slice(before).includes(series) ? resolve() : setTimeout(check, 50));
      check();
    }),
    5000,
    'the metrics answer',
  );
  return metricIn(raw.received().slice(before), series);
}
