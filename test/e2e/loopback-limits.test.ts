/**
 * Per-client limits as the bind and authentication make them, through a real proxy in front of
 * server-everything over stdio: on loopback without authentication every local program is the
 * same client, so unset limits are off there (a benchmark loop gets no 429); with
 * authentication they stay as strict as before; a configured value always applies.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { EVERYTHING_STDIO, commandLine, logged, startProxy, stopAll } from '../helpers/processes.js';
import { callTool, INIT, rawPost, type RawReply } from '../helpers/raw.js';

const EVERYTHING = commandLine(EVERYTHING_STDIO);
const TOKEN = 'loopback-limits-token-0123456789';

function config(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-loopback-')), 'proxy.yaml');
  writeFileSync(file, `upstream:\n  command: ${JSON.stringify(EVERYTHING)}\n${yaml}`);
  return file;
}

/** A session's headers (initialized) as the holder of `auth` headers. */
async function session(url: string, auth: Record<string, string> = {}): Promise<Record<string, string>> {
  const init = await rawPost(url, INIT, auth);
  expect(init.status).toBe(200);
  const headers = { ...auth, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

const ping = (url: string, headers: Record<string, string>, id: number) => rawPost(url, { jsonrpc: '2.0', id, method: 'ping' }, headers);
const refusedForRate = (replies: RawReply[]) => replies.filter((r) => r.status === 429 && /per second/.test(r.messages[0]?.error?.message));

/** Pings in concurrent bursts until the rate limit refuses one: however slow the machine, a burst lands inside one second. */
async function burstsUntilRefused(url: string, headers: Record<string, string>, burst: number): Promise<RawReply[]> {
  const replies: RawReply[] = [];
  for (let sent = 0; refusedForRate(replies).length === 0 && sent < 2000; sent += burst)
    replies.push(...(await Promise.all(Array.from({ length: burst }, (_, i) => ping(url, headers, sent + i + 1)))));
  return replies;
}

describe('per-client limits on loopback without authentication (the default)', () => {
  afterAll(stopAll);

  it('lets one local client make 500 back-to-back calls, hold 12 sessions and have 80 calls in flight, and says why at start-up', async () => {
    const proxy = await startProxy(['--upstream', EVERYTHING]);
    await logged(proxy, (e) =>
      /^per-client limits: requestsPerSecond off, inFlight off, sessions off \(loopback without authentication: /.test(e.msg),
    );
    const headers = await session(proxy.url);
    const statuses = new Map<number, number>();
    for (let i = 1; i <= 500; i++) {
      const reply = await rawPost(proxy.url, callTool(i, 'echo', { message: `call ${i}` }), headers);
      statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
      expect(reply.messages.at(-1)?.result?.content?.[0]?.text, `call ${i}: ${reply.text.slice(0, 300)}`).toBe(`Echo: call ${i}`);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: 500 });
    // More sessions than the 8 one address had before (half of upstream.maxProcesses).
    const sessions = [headers];
    for (let i = 0; i < 11; i++) sessions.push(await session(proxy.url));
    // More calls in flight at once than the 64 one address had before: each takes a second upstream.
    const slow = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        rawPost(proxy.url, callTool(1000 + i, 'trigger-long-running-operation', { duration: 1, steps: 1 }), sessions[i % sessions.length]),
      ),
    );
    expect(slow.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    expect(slow.every((r) => /completed/.test(r.messages.at(-1)?.result?.content?.[0]?.text))).toBe(true);
  }, 60_000);

  it('applies a configured limit there all the same', async () => {
    const proxy = await startProxy(['--config', config('listen:\n  perClient: { requestsPerSecond: 20 }\n')]);
    await logged(proxy, (e) => /^per-client limits: requestsPerSecond 20, inFlight off, sessions off \(loopback/.test(e.msg));
    const headers = await session(proxy.url);
    const replies = await burstsUntilRefused(proxy.url, headers, 10);
    expect(refusedForRate(replies).length).toBeGreaterThan(0);
    expect(refusedForRate(replies)[0].messages[0].error.message).toMatch(/at most 20 per second/);
  });
});

describe('per-client limits with authentication', () => {
  afterAll(stopAll);

  it('keeps the strict defaults on loopback: 100 requests per second per principal', async () => {
    const proxy = await startProxy(['--config', config(`auth:\n  tokens:\n    - { name: ci, sha256: ${hashToken(TOKEN)} }\n`)]);
    await logged(proxy, (e) => e.msg === 'per-client limits: requestsPerSecond 100, inFlight 64, sessions 8');
    const headers = await session(proxy.url, { authorization: `Bearer ${TOKEN}` });
    const replies = await burstsUntilRefused(proxy.url, headers, 50);
    expect(refusedForRate(replies).length).toBeGreaterThan(0);
    // The initialize and its notification were two of the first window's 100.
    expect(replies.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(98);
    expect(refusedForRate(replies)[0].headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refusedForRate(replies)[0].messages[0].error.message).toMatch(/at most 100 per second/);
  });
});
