/**
 * Principals kept apart through a real proxy in front of a stateful stdio server (the faulty
 * fixture's remember/recall keep notes in the process): modern requests and shared legacy
 * sessions never reach another principal's upstream process, input rounds belong to whoever
 * started them (also across a restart with the same secret), and one client parking calls or
 * opening sessions cannot starve the others.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { callTool, INIT, metricValue, modern, rawPost } from '../helpers/raw.js';
import { commandLine, fixtureArgv, startProxy, stopAll } from '../helpers/processes.js';

const FAULTY = commandLine(fixtureArgv('faulty-server'));
const PEOPLE = ['alice', 'bob', 'carol', 'dave'];
const token = (who: string) => `${who}-token-0123456789`;
const as = (who: string) => ({ authorization: `Bearer ${token(who)}` });
const SECRET = 'principals-test-secret-0123456789abcdef';
const ELICIT = { elicitation: { form: {} } };

/** A config with a token for each of PEOPLE; `upstream` adds keys to the upstream section. */
function config(yaml: string, upstream = ''): string {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-principals-')), 'proxy.yaml');
  const tokens = PEOPLE.map((p) => `    - { name: ${p}, sha256: ${hashToken(token(p))} }`).join('\n');
  writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\n${upstream}auth:\n  tokens:\n${tokens}\n${yaml}`);
  return file;
}

/** A modern tools/call as `who`; the result (or error) it got. */
async function call(
  url: string,
  who: string,
  id: number,
  name: string,
  args: Record<string, unknown> = {},
  caps: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  const m = modern(id, 'tools/call', { name, arguments: args, ...extra }, caps);
  const reply = await rawPost(url, m.body, { ...m.headers, ...as(who) });
  return { status: reply.status, ...reply.messages[0] };
}
const textOf = (r: { result?: { content?: Array<{ text: string }> } }) => r.result?.content?.[0]?.text;

/** A legacy session as `who`: headers for later requests. */
async function legacySession(url: string, who: string) {
  const init = await rawPost(url, INIT, as(who));
  expect(init.status).toBe(200);
  const headers = { ...as(who), 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

describe('pooled upstream sessions and principals', () => {
  afterAll(stopAll);

  it('never serve one principal’s modern request from another principal’s upstream process', async () => {
    const proxy = await startProxy(['--config', config('')]);
    expect(textOf(await call(proxy.url, 'alice', 1, 'remember', { note: 'alice-secret' }))).toBe('remembered');
    expect(JSON.parse(textOf(await call(proxy.url, 'bob', 2, 'recall'))!)).toEqual([]);
    expect(JSON.parse(textOf(await call(proxy.url, 'alice', 3, 'recall'))!)).toEqual(['alice-secret']);
  });

  it('keep shared legacy sessions (upstream.sessions: shared) to their principal too', async () => {
    const proxy = await startProxy(['--config', config('', '  sessions: shared\n')]);
    const alice = await legacySession(proxy.url, 'alice');
    const bob = await legacySession(proxy.url, 'bob');
    expect(textOf((await rawPost(proxy.url, callTool(1, 'remember', { note: 'alice-secret' }), alice)).messages[0])).toBe('remembered');
    expect(JSON.parse(textOf((await rawPost(proxy.url, callTool(1, 'recall'), bob)).messages[0])!)).toEqual([]);
  });

  it('share them across principals only when the server is declared stateless', async () => {
    const proxy = await startProxy(['--config', config('', '  stateless: true\n')]);
    await call(proxy.url, 'alice', 1, 'remember', { note: 'shared-note' });
    expect(JSON.parse(textOf(await call(proxy.url, 'bob', 2, 'recall'))!)).toEqual(['shared-note']);
  });

  it('start one upstream session for thirty requests that invent capability members', async () => {
    const proxy = await startProxy(['--config', config('modern:\n  pool: { warmSpare: false }\n')]);
    for (let i = 0; i < 30; i++)
      expect(textOf(await call(proxy.url, 'alice', i + 1, 'echo', { text: 'x' }, { roots: { [`r${i}-${Math.random()}`]: {} } }))).toBe('x');
    // One for alice's calls, and at most one that answered the proxy's own first look at the server.
    expect(await metricValue(proxy.url, 'mcp_proxy_upstream_processes')).toBeLessThanOrEqual(2);
  });
});

describe('input rounds', () => {
  afterAll(stopAll);

  it('belong to whoever started them: a requestState from before a restart resumes nothing', async () => {
    const env = { MCP_PROXY_SECRET: SECRET };
    const file = config('');
    const first = await startProxy(['--config', file], env);
    const asked = await call(first.url, 'alice', 1, 'elicit', { message: 'who?' }, ELICIT);
    expect(asked.result.resultType).toBe('input_required');
    const aliceState = asked.result.requestState;
    const [aliceKey] = Object.keys(asked.result.inputRequests);
    await first.stop();

    const second = await startProxy(['--config', file], env);
    const bobAsked = await call(second.url, 'bob', 1, 'elicit', { message: 'who?' }, ELICIT);
    expect(bobAsked.result.resultType).toBe('input_required');
    const answer = (key: string) => ({ [key]: { action: 'accept', content: { name: 'Mallory' } } });
    // Alice replays her old state (same secret, same arguments): it names no call here.
    const replay = await call(second.url, 'alice', 2, 'elicit', { message: 'who?' }, ELICIT, {
      requestState: aliceState,
      inputResponses: answer(aliceKey),
    });
    expect(replay.error).toMatchObject({ data: { code: 'INVALID_REQUEST_STATE' } });
    const [bobKey] = Object.keys(bobAsked.result.inputRequests);
    const done = await call(second.url, 'bob', 2, 'elicit', { message: 'who?' }, ELICIT, {
      requestState: bobAsked.result.requestState,
      inputResponses: { [bobKey]: { action: 'accept', content: { name: 'Bob' } } },
    });
    expect(done.result.resultType).toBe('complete');
    expect(textOf(done)).toContain('Bob');
  });
});

describe('fairness', () => {
  afterAll(stopAll);

  it('keeps at most parkedPerClient calls of one client waiting for its input, giving up the oldest, and others keep being served', async () => {
    const proxy = await startProxy(['--config', config('modern:\n  parkedPerClient: 2\n  pool: { maxSessions: 8, warmSpare: false }\n')]);
    const parked: Array<Awaited<ReturnType<typeof call>>> = [];
    for (let i = 0; i < 5; i++) parked.push(await call(proxy.url, 'alice', i + 1, 'elicit', { message: 'who?' }, ELICIT));
    expect(parked.every((r) => r.result.resultType === 'input_required')).toBe(true);
    // Alice's three oldest calls were given up: their states resume nothing; her two newest go on.
    const retry = (r: (typeof parked)[number], id: number) =>
      call(proxy.url, 'alice', id, 'elicit', { message: 'who?' }, ELICIT, {
        requestState: r.result.requestState,
        inputResponses: { [Object.keys(r.result.inputRequests)[0]]: { action: 'accept', content: { name: 'Ada' } } },
      });
    expect((await retry(parked[0], 10)).error).toMatchObject({ data: { code: 'INVALID_REQUEST_STATE' } });
    expect((await retry(parked[4], 11)).result.resultType).toBe('complete');
    // Two waiting calls hold two sessions: alice's plain calls, and everyone else's calls, still run.
    expect(await metricValue(proxy.url, 'mcp_proxy_upstream_processes')).toBeLessThanOrEqual(4);
    expect(textOf(await call(proxy.url, 'alice', 12, 'echo', { text: 'plain' }))).toBe('plain');
    expect((await call(proxy.url, 'bob', 1, 'elicit', { message: 'who?' }, ELICIT)).result.resultType).toBe('input_required');
    expect(textOf(await call(proxy.url, 'carol', 1, 'echo', { text: 'served' }))).toBe('served');
  });

  it('holds at most a quarter of the pool for one client, and keeps a quarter for calls that cannot ask for input', async () => {
    const proxy = await startProxy(['--config', config('modern:\n  parkedPerClient: 16\n  pool: { maxSessions: 8, warmSpare: false }\n')]);
    const outcome = (r: Awaited<ReturnType<typeof call>>) => r.result?.resultType ?? r.error.data.code;
    const elicit = async (who: string, times: number) => {
      const got: string[] = [];
      for (let i = 0; i < times; i++) got.push(outcome(await call(proxy.url, who, i + 1, 'elicit', { message: 'who?' }, ELICIT)));
      return got;
    };
    // A quarter of 8 for each client: a third call waiting for input is refused.
    expect(await elicit('alice', 3)).toEqual(['input_required', 'input_required', 'UPSTREAM_BUSY']);
    expect(await elicit('bob', 2)).toEqual(['input_required', 'input_required']);
    expect(await elicit('carol', 2)).toEqual(['input_required', 'input_required']);
    // 8 - 8/4 = 6 sessions for calls that may ask for input are taken; the rest is kept for the others.
    const kept = await call(proxy.url, 'dave', 1, 'elicit', { message: 'who?' }, ELICIT);
    expect(kept.error).toMatchObject({ data: { code: 'UPSTREAM_BUSY' }, message: expect.stringContaining('kept for other calls') });
    expect(textOf(await call(proxy.url, 'dave', 2, 'echo', { text: 'room left' }))).toBe('room left');
  });

  it('lets one client hold at most half the isolated upstream processes by default', async () => {
    const proxy = await startProxy(['--config', config('', '  maxProcesses: 4\n')]);
    await legacySession(proxy.url, 'alice');
    await legacySession(proxy.url, 'alice');
    const third = await rawPost(proxy.url, INIT, as('alice'));
    expect(third.status).toBe(429);
    expect(third.messages[0].error.message).toMatch(/limit 2, listen\.perClient\.sessions/);
    await legacySession(proxy.url, 'bob');
  });
});
