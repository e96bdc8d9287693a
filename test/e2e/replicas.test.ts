/**
 * Replicas that share only a secret: one legacy session's requests go to each of three proxy
 * replicas in turn (session id = sealed token), server→client requests are answered through
 * another replica than the one that asked, and one replica stops mid-session. Over a stdio
 * upstream a session lives in one replica: another one forwards its requests there, once, after
 * its own checks. A modern retry that lands on another replica than the one holding its call is
 * forwarded there.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  commandLine,
  eventually,
  fixtureArgv,
  logEntries,
  logged,
  ROOT,
  startEverythingHttp,
  startHttpFixture,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { callTool, INIT, metricValue, modern, rawPost, rawSession, read, sseMessages } from '../helpers/raw.js';
import { hashToken } from '../../src/fronts/http/auth.js';

const SECRET = 'replica-test-secret-0123456789abcdef';
const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0].text;

/** Proxy replicas sharing SECRET, one per id, in front of `upstreamArg`. */
function startReplicas(upstreamArg: string, ids: string[]): Promise<Running[]> {
  return Promise.all(ids.map((id) => startProxy(['--upstream', upstreamArg], { MCP_PROXY_SECRET: SECRET, MCP_PROXY_REPLICA_ID: id })));
}

/** A fetch that sends each request to the next live replica, whatever URL the client thinks it uses. */
function roundRobin(replicas: Running[], served: string[]): typeof fetch {
  let next = 0;
  return (input, init) => {
    const live = replicas.filter((r) => r.proc.exitCode === null && r.proc.signalCode === null);
    const target = live[next++ % live.length];
    served.push(target.url);
    return fetch(new URL(new URL(String(input instanceof Request ? input.url : input)).pathname, target.url), init);
  };
}

describe('replicas sharing a secret, in front of an HTTP upstream', () => {
  let upstream: Running;
  let replicas: Running[];

  beforeAll(async () => {
    upstream = await startHttpFixture('faulty-server');
    replicas = await startReplicas(upstream.url, ['r1', 'r2', 'r3']);
  }, 60_000);
  afterAll(stopAll);

  it('serves one session from every replica in turn, keeps its negotiated context, and survives a replica stopping', async () => {
    const served: string[] = [];
    const client = new Client(
      { name: 'replica-test', version: '1.0.0' },
      {
        capabilities: {
          elicitation: { form: {} },
          extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features: ['format=json'] } },
        },
      },
    );
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    const transport = new StreamableHTTPClientTransport(new URL(replicas[0].url), { fetch: roundRobin(replicas, served) });
    await client.connect(transport);

    // The upstream's per-session counter counts on: every replica speaks for the same upstream session.
    const counts: string[] = [];
    for (let i = 0; i < 6; i++) counts.push(text(await client.callTool({ name: 'bump', arguments: {} })));
    expect(counts).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(new Set(served).size).toBe(3);
    for (const r of replicas.slice(1)) expect(r.stderr()).toContain('session resumed from its token');

    // format=json, negotiated at initialize on r1, still shapes results on the others.
    for (let i = 0; i < 3; i++) {
      const r = await client.callTool({ name: 'echo', arguments: { text: '{"city":"Bern","n":8}' } });
      expect(r.structuredContent).toEqual({ city: 'Bern', n: 8 });
    }

    // The elicitation request goes out on one replica's stream; the client's answer reaches another.
    for (let i = 0; i < 3; i++) {
      expect(JSON.parse(text(await client.callTool({ name: 'elicit', arguments: { message: 'who?' } })))).toMatchObject({
        action: 'accept',
        content: { name: 'Ada' },
      });
    }

    expect(await replicas[1].stop()).toBe(0);
    for (let i = 0; i < 4; i++) counts.push(text(await client.callTool({ name: 'bump', arguments: {} })));
    expect(counts.slice(6)).toEqual(['7', '8', '9', '10']);

    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    // The session is over upstream: a replica still holding it finds out and the token is dead everywhere it is tried.
    for (const r of [replicas[0], replicas[2]]) {
      const res = await rawPost(
        r.url,
        { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'bump', arguments: {} } },
        { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      );
      const after = await rawPost(
        r.url,
        { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'bump', arguments: {} } },
        { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      );
      expect([res.status, after.status]).toContain(404);
    }
    await client.close();
  }, 60_000);

  it('rotates secrets: a replica with a new secret still resumes sessions sealed with the previous one', async () => {
    const NEW = 'the-next-secret-after-rotation-0123456789';
    const rotated = await startProxy(['--upstream', upstream.url], {
      MCP_PROXY_SECRET: NEW,
      MCP_PROXY_PREVIOUS_SECRETS: SECRET,
      MCP_PROXY_REPLICA_ID: 'rotated',
    });
    const old = await rawSession(replicas[0].url);
    const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' };
    expect((await rawPost(rotated.url, list, old)).status).toBe(200);
    // What the rotated replica seals, only replicas with the new secret open.
    const fresh = await rawSession(rotated.url);
    expect((await rawPost(replicas[0].url, list, fresh)).status).toBe(404);
    await rotated.stop();
  });

  it('refuses tokens it cannot open: forged, altered, or sealed with another secret', async () => {
    const other = await startProxy(['--upstream', upstream.url], { MCP_PROXY_SECRET: 'another-secret-entirely-0123456789ab' });
    const init = await rawPost(other.url, INIT);
    const foreign = init.headers.get('mcp-session-id')!;
    const ok = await rawPost(replicas[0].url, INIT);
    const mine = ok.headers.get('mcp-session-id')!;
    const altered = `${mine.slice(0, -6)}${mine.slice(-6) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}`;
    for (const id of [foreign, altered, 'made-up', `${mine.split('.')[0]}.${'A'.repeat(60)}`]) {
      const res = await rawPost(replicas[2].url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': id });
      expect(res.status).toBe(404);
      expect(JSON.stringify(res.messages)).toMatch(/Session not found/);
    }
    await other.stop();
  });
});

/** A client GET stream: the JSON-RPC messages it has carried so far. */
async function openGet(url: string, headers: Record<string, string>): Promise<{ messages: any[]; close(): void }> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: abort.signal });
  expect(res.status).toBe(200);
  return { messages: sseMessages(res).messages, close: () => abort.abort() };
}

describe('a session ended at one replica, presented at another', () => {
  afterAll(stopAll);

  it('is let go of when the upstream does not know it (server-everything answers 400), not kept counted', async () => {
    const upstream = await startEverythingHttp();
    const [r1, r2] = await startReplicas(upstream.url, ['d1', 'd2']);
    const headers = await rawSession(r1.url);
    expect((await fetch(r1.url, { method: 'DELETE', headers })).status).toBe(200);
    const late = await rawPost(r2.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers);
    expect(late.messages[0].error.data.code).toBe('UPSTREAM_SESSION_EXPIRED');
    await eventually(async () => (await metricValue(r2.url, 'mcp_proxy_sessions')) === 0, 5000, 'the resumed session let go of');
    expect((await rawPost(r2.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers)).status).toBe(404);
  });
});

describe('the GET stream of a session shared by replicas', () => {
  afterAll(stopAll);

  it('follows the client: the replica its GET reaches holds the upstream stream, and hands it over when the client moves', async () => {
    const upstream = await startHttpFixture('faulty-server');
    const [a, b, c] = await startReplicas(upstream.url, ['g1', 'g2', 'g3']);
    const headers = await rawSession(a.url);
    let id = 100;
    /** Calls `announce` (a notification that belongs to no request) until `stream` carries one. */
    const announceUntilSeen = async (stream: { messages: any[] }) => {
      const seen = () => stream.messages.some((m) => m.method === 'notifications/tools/list_changed');
      await eventually(
        async () => {
          if (!seen())
            expect(
              (
                await rawPost(
                  a.url,
                  { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'announce', arguments: {} } },
                  headers,
                )
              ).status,
            ).toBe(200);
          return seen();
        },
        20_000,
        'an unrelated notification on the GET stream',
      );
    };

    const onB = await openGet(b.url, headers);
    await announceUntilSeen(onB);
    onB.close();
    // C's upstream GET may meet a 409 while B still holds the stream; it retries until B has let go.
    const onC = await openGet(c.url, headers);
    await announceUntilSeen(onC);
    onC.close();
  }, 60_000);
});

describe('a legacy session whose upstream runs at one replica (a stdio upstream)', () => {
  afterAll(stopAll);
  const dir = mkdtempSync(join(tmpdir(), 'proxy-forward-legacy-'));
  /** A replica sharing SECRET in front of a stdio upstream of its own, with more YAML and environment. */
  const replica = (id: string, yaml = '', env: Record<string, string> = {}) => {
    const file = join(dir, `${id}.yaml`);
    writeFileSync(file, `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\n${yaml}`);
    return startProxy(['--config', file], { MCP_PROXY_SECRET: SECRET, MCP_PROXY_REPLICA_ID: id, ...env });
  };
  /** The access-log lines of `r` so far. */
  const requests = (r: Running) => logEntries(r).filter((e) => e.msg === 'request');
  /** Those of tools/call requests (the initialize and notification lines of a session may come later than its answers). */
  const calls = (r: Running) => requests(r).filter((e) => e.rpc === 'tools/call');
  const bump = async (url: string, id: number, headers: Record<string, string>) => {
    const res = await rawPost(url, callTool(id, 'bump'), headers);
    expect(res.status, res.text).toBe(200);
    return text(res.messages[0].result);
  };
  /** A session at `url` opened with `auth` headers (rawSession sends none). */
  const sessionWith = async (url: string, auth: Record<string, string>) => {
    const init = await rawPost(url, INIT, auth);
    expect(init.status, init.text).toBe(200);
    const headers = { ...auth, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
    return headers;
  };

  it('forwards its requests, its GET stream and its DELETE to that replica, and says clearly when that replica is gone', async () => {
    const [a, b] = await Promise.all([replica('alpha'), replica('beta')]);
    const headers = await rawSession(a.url);
    // One upstream session whichever replica a request reaches: its counter counts on.
    expect([await bump(b.url, 1, headers), await bump(a.url, 2, headers), await bump(b.url, 3, headers)]).toEqual(['1', '2', '3']);
    await eventually(() => requests(b).some((e) => e.session === 'at alpha'), 5000, "the forwarded request in beta's access log");

    // The GET stream, held through beta, carries what the upstream announces outside any request.
    const stream = await openGet(b.url, headers);
    let id = 10;
    await eventually(
      async () => {
        const seen = () => stream.messages.some((m) => m.method === 'notifications/tools/list_changed');
        if (!seen()) expect((await rawPost(b.url, callTool(id++, 'announce'), headers)).status).toBe(200);
        return seen();
      },
      20_000,
      'an unrelated notification on the GET stream held through beta',
    );
    stream.close();

    expect((await fetch(b.url, { method: 'DELETE', headers })).status).toBe(200);
    expect((await rawPost(a.url, callTool(30, 'bump'), headers)).status).toBe(404);

    const orphan = await rawSession(a.url);
    expect(await a.stop()).toBe(0);
    const lost = await rawPost(b.url, callTool(31, 'bump'), orphan);
    expect(lost.status).toBe(404);
    expect(lost.messages[0]).toMatchObject({
      id: 31,
      error: { code: -32001, message: expect.stringMatching(/lives on replica "alpha".*cannot be reached/), data: { replica: 'alpha' } },
    });
  }, 60_000);

  it('refuses what a client makes up: an altered token, a hop header, and a token naming a replica that forwards back', async () => {
    const [a, b] = await Promise.all([replica('alpha-2'), replica('beta-2')]);
    // gamma says it is reached at beta's URL: a session of gamma's sent to alpha goes to beta, and stops there.
    const c = await replica('gamma-2', '', { MCP_PROXY_REPLICA_URL: b.url });
    const headers = await rawSession(a.url);

    const altered = { ...headers, 'mcp-session-id': `${headers['mcp-session-id'].slice(0, -4)}AAAA` };
    const refused = await rawPost(b.url, callTool(1, 'bump'), altered);
    expect(refused.status).toBe(404);
    expect(refused.messages[0].error.message).toMatch(/Session not found: it ended or never existed/);

    const posing = await rawPost(b.url, callTool(2, 'bump'), { ...headers, 'mcp-proxy-forwarded-by': 'alpha-2' });
    expect(posing.status).toBe(404);
    expect(posing.messages[0].error.message).toMatch(/lives on replica "alpha-2".*not forwarded again/);
    // The replica holding the session serves it, hop header or not.
    expect(await bump(a.url, 3, { ...headers, 'mcp-proxy-forwarded-by': 'beta-2' })).toBe('1');

    const elsewhere = await rawSession(c.url);
    const atBeta = calls(b).length;
    const looped = await rawPost(a.url, callTool(4, 'bump'), elsewhere);
    expect(looped.status).toBe(404);
    expect(looped.messages[0].error.message).toMatch(/lives on replica "gamma-2".*not forwarded again/);
    const direct = await rawPost(b.url, callTool(5, 'bump'), elsewhere);
    expect(direct.status).toBe(404);
    expect(direct.messages[0].error.message).toMatch(/lives on replica "gamma-2".*URL its token names \(replicas.url\) is this replica's/);
    await eventually(() => calls(b).length === atBeta + 2, 5000, "both requests in beta's access log");
    // alpha logged the two it was sent (the bump it served, the request it forwarded), and nothing came back to it.
    await eventually(() => calls(a).length === 2, 5000, "alpha's two requests in its access log");
  }, 60_000);

  it("checks the client's credentials and the limits at the replica it reaches, before forwarding", async () => {
    const yaml =
      `auth:\n  tokens:\n    - { name: alice, sha256: ${hashToken('alice-token-0123456789')} }\n` +
      `    - { name: bob, sha256: ${hashToken('bob-token-0123456789')} }\nlisten:\n  maxBodyBytes: 65536\n`;
    const [a, b] = await Promise.all([replica('alpha-3', yaml), replica('beta-3', yaml)]);
    const alice = { authorization: 'Bearer alice-token-0123456789' };
    const headers = await sessionWith(a.url, alice);

    const anonymous = { 'mcp-session-id': headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
    expect((await rawPost(b.url, callTool(1, 'bump'), anonymous)).status).toBe(401);
    const bob = await rawPost(b.url, callTool(2, 'bump'), { ...headers, authorization: 'Bearer bob-token-0123456789' });
    expect(bob.status).toBe(403);
    expect(bob.messages[0].error.message).toMatch(/issued to another client identity/);
    const huge = JSON.stringify(callTool(3, 'echo', { text: 'x'.repeat(70_000) }));
    expect((await rawPost(b.url, huge, headers)).status).toBe(413);

    expect(await bump(b.url, 4, headers)).toBe('1');
    await eventually(() => calls(a).length === 1, 5000, "the forwarded request in alpha's access log");
    // Only the request beta let through reached alpha, where the same credentials were checked again.
    expect(calls(a)[0]).toMatchObject({ principal: 'token:alice', rpc: 'tools/call', status: 200 });
  }, 60_000);

  it('gives up on a replica whose answer does not begin within timeouts.requestMs and 5 s, with a clear error, not a hang', async () => {
    const yaml = 'timeouts:\n  requestMs: 1000\n';
    const [a, b] = await Promise.all([replica('alpha-4', yaml), replica('beta-4', yaml)]);
    const headers = await rawSession(a.url);
    a.proc.kill('SIGSTOP');
    try {
      const started = Date.now();
      const late = await rawPost(b.url, callTool(1, 'bump'), headers);
      expect(late.status).toBe(504);
      expect(late.messages[0]).toMatchObject({
        id: 1,
        error: { code: -32001, message: expect.stringMatching(/"alpha-4"\) did not answer: its answer did not begin within 6000 ms/) },
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(5500);
    } finally {
      a.proc.kill('SIGCONT');
    }
  }, 60_000);
});

describe('modern input rounds across replicas', () => {
  afterAll(stopAll);

  it('forwards a retry to the replica that holds its call, and says so clearly when that replica is gone', async () => {
    const upstreamArg = commandLine(fixtureArgv('faulty-server'));
    const [a, b] = await startReplicas(upstreamArg, ['alpha', 'beta']);
    const caps = { elicitation: { form: {} } };
    const ask = async (id: number) => {
      const r = modern(id, 'tools/call', { name: 'elicit', arguments: { message: 'who?' } }, caps);
      const result = (await rawPost(a.url, r.body, r.headers)).messages[0].result;
      expect(result.resultType).toBe('input_required');
      const [key] = Object.keys(result.inputRequests);
      return modern(
        id + 1,
        'tools/call',
        {
          name: 'elicit',
          arguments: { message: 'who?' },
          requestState: result.requestState,
          inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
        },
        caps,
      );
    };

    const retry = await ask(1);
    const answered = (await rawPost(b.url, retry.body, retry.headers)).messages[0].result;
    expect(answered.resultType).toBe('complete');
    expect(JSON.parse(answered.content[0].text)).toMatchObject({ action: 'accept', content: { name: 'Ada' } });

    const orphan = await ask(3);
    expect(await a.stop()).toBe(0);
    const lost = await rawPost(b.url, orphan.body, orphan.headers);
    expect(lost.status).toBe(400);
    expect(lost.messages[0].error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/replica holding this call \("alpha"\) cannot be reached.*without requestState/),
    });
  }, 60_000);
});

describe('the client address of a request forwarded between replicas', () => {
  afterAll(stopAll);

  /** A replica sharing SECRET in front of a stdio upstream, with `listen` settings of its own. */
  const replica = (id: string, listen: string) => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-forward-')), 'replica.yaml');
    writeFileSync(file, `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\nlisten:\n${listen}`);
    return startProxy(['--config', file], { MCP_PROXY_SECRET: SECRET, MCP_PROXY_REPLICA_ID: id });
  };
  const caps = { elicitation: { form: {} } };
  let nextId = 1;
  /** Parks a call at `holder` and returns its retry. */
  const parked = async (holder: Running, headers: Record<string, string> = {}) => {
    const id = nextId;
    nextId += 2;
    const r = modern(id, 'tools/call', { name: 'elicit', arguments: { message: `who? ${id}` } }, caps);
    const result = (await rawPost(holder.url, r.body, { ...r.headers, ...headers })).messages[0].result;
    expect(result.resultType).toBe('input_required');
    const [key] = Object.keys(result.inputRequests);
    return modern(
      id + 1,
      'tools/call',
      {
        name: 'elicit',
        arguments: { message: `who? ${id}` },
        requestState: result.requestState,
        inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
      },
      caps,
    );
  };
  /** The addresses in the access log of `r` for tools/call requests, in order. */
  const callAddresses = (r: Running) =>
    logEntries(r)
      .filter((e) => e.msg === 'request' && e.rpc === 'tools/call')
      .map((e) => e.address as string);

  it("counts a forwarded request as the client the forwarding replica saw: never the client's own X-Forwarded-For, and also where the owner does not trust the forwarder", async () => {
    // alpha is behind a balancer (loopback) and so trusts X-Forwarded-For from 127.0.0.1; beta trusts nobody's.
    const [alpha, beta] = await Promise.all([replica('alpha', '  trustProxy: ["127.0.0.1"]\n'), replica('beta', '  trustProxy: false\n')]);

    // A client reaches beta directly with an X-Forwarded-For of its own making; beta counts it as 127.0.0.1.
    const retry = await parked(alpha, { 'x-forwarded-for': '198.51.100.20' });
    const answered = await rawPost(beta.url, retry.body, { ...retry.headers, 'x-forwarded-for': '203.0.113.66' });
    expect(answered.messages[0].result.resultType).toBe('complete');
    await eventually(() => callAddresses(alpha).length === 2, 5000, "the forwarded retry in alpha's access log");
    expect(callAddresses(alpha)).toEqual(['198.51.100.20', '127.0.0.1']);

    // The balancer gives alpha a client at 203.0.113.5 whose call waits on beta: beta counts the retry as 203.0.113.5.
    const back = await parked(beta);
    const done = await rawPost(alpha.url, back.body, { ...back.headers, 'x-forwarded-for': '203.0.113.5' });
    expect(done.messages[0].result.resultType).toBe('complete');
    await eventually(
      () => callAddresses(beta).length === 3 && callAddresses(alpha).length === 3,
      5000,
      'the forwarded retry in both access logs',
    );
    expect(callAddresses(beta)).toEqual(['127.0.0.1', '127.0.0.1', '203.0.113.5']);
    expect(callAddresses(alpha)[2]).toBe('203.0.113.5');

    // A client cannot pose as a replica: a header it makes up is not believed.
    const forged = await parked(beta);
    const posing = await rawPost(beta.url, forged.body, {
      ...forged.headers,
      'mcp-proxy-client': 'made-up',
      'mcp-proxy-forwarded-by': 'alpha',
    });
    expect(posing.messages[0].result.resultType).toBe('complete');
    await eventually(() => callAddresses(beta).length === 5, 5000, "the posing request in beta's access log");
    expect(callAddresses(beta).slice(3)).toEqual(['127.0.0.1', '127.0.0.1']);
    await logged(beta, (e) => /mcp-proxy-client header that does not open/.test(e.msg), 5000, 'the refused header logged');
  }, 60_000);
});

describe('task status across replicas', () => {
  afterAll(stopAll);

  it('serves a listen stream for tasks at the replica that holds them', async () => {
    const [a, b] = await startReplicas(commandLine(fixtureArgv('faulty-server')), ['alpha', 'beta']);
    const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const call = modern(1, 'tools/call', { name: 'slow_progress', arguments: { steps: 4, delayMs: 250 } }, caps);
    const created = (await rawPost(a.url, call.body, call.headers)).messages[0].result;
    expect(created.resultType).toBe('task');
    const listen = modern(2, 'subscriptions/listen', { notifications: { taskIds: [created.taskId] } }, caps);
    const abort = new AbortController();
    const res = await fetch(b.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...listen.headers },
      body: JSON.stringify(listen.body),
      signal: abort.signal,
    });
    try {
      const stream = sseMessages(res);
      expect((await stream.next((m) => m.method === 'notifications/subscriptions/acknowledged')).params.notifications).toEqual({
        taskIds: [created.taskId],
      });
      const done = await stream.next((m) => m.method === 'notifications/tasks' && m.params.status === 'completed');
      expect(done.params.result.content[0].text).toBe('done 4');
    } finally {
      abort.abort();
    }
  }, 60_000);
});

describe('modern rounds in front of a 2026-07-28 server, across replicas', () => {
  afterAll(stopAll);

  it("carries the server's sealed requestState from one replica to the next, and a replica with another secret refuses it", async () => {
    const upstream = await startHttpFixture('modern-server');
    const [a, b] = await startReplicas(upstream.url, ['alpha', 'beta']);
    const other = await startProxy(['--upstream', upstream.url], { MCP_PROXY_SECRET: 'another-secret-entirely-0123456789ab' });
    const caps = { elicitation: { form: {} } };
    const first = modern(1, 'tools/call', { name: 'ask_twice', arguments: {} }, caps);
    const round1 = (await rawPost(a.url, first.body, first.headers)).messages[0].result;
    const retry1 = modern(
      2,
      'tools/call',
      { name: 'ask_twice', arguments: {}, inputResponses: { first: { action: 'accept', content: { name: 'Ada' } } } },
      caps,
    );
    const round2 = (await rawPost(b.url, retry1.body, retry1.headers)).messages[0].result;
    expect([round1.resultType, round2.resultType]).toEqual(['input_required', 'input_required']);
    const retry2 = (state: string) =>
      modern(
        3,
        'tools/call',
        {
          name: 'ask_twice',
          arguments: {},
          requestState: state,
          inputResponses: { second: { action: 'accept', content: { name: 'Lovelace' } } },
        },
        caps,
      );
    const refused = await rawPost(other.url, retry2(round2.requestState).body, retry2(round2.requestState).headers);
    expect(refused.messages[0].error).toMatchObject({ code: -32602, data: { code: 'INVALID_REQUEST_STATE' } });
    const done = (await rawPost(a.url, retry2(round2.requestState).body, retry2(round2.requestState).headers)).messages[0].result;
    expect(text(done)).toBe('Ada Lovelace');
  }, 60_000);
});

/** nginx from the system (Debian's package installs it in /usr/sbin), or undefined. */
function findNginx(): string | undefined {
  for (const candidate of ['nginx', '/usr/sbin/nginx']) {
    try {
      execFileSync(candidate, ['-v'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
const NGINX = findNginx();

/** nginx from the system running the repository's deploy/nginx.conf in front of `replicas`, on a socket of its own. */
async function startNginx(replicas: Running[]): Promise<{ fetch: typeof fetch; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-nginx-'));
  const socket = join(dir, 'nginx.sock');
  const site = readFileSync(`${ROOT}deploy/nginx.conf`, 'utf8')
    .replace(
      /^\s*server proxy-scaled:8080.*$/m,
      replicas.map((r) => `    server ${new URL(r.url).host} max_fails=1 fail_timeout=10s;`).join('\n'),
    )
    .replace(/listen 8080;/, `listen unix:${socket};`);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t};`).join(' ');
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;\nworker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\naccess_log off;\n${temp}\n${site}\n}\n`,
  );
  const nginx = spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: 'ignore' });
  const stop = async () => {
    nginx.kill('SIGTERM');
    await new Promise((resolve) => (nginx.exitCode !== null ? resolve(undefined) : nginx.once('exit', resolve)));
  };
  try {
    await eventually(() => existsSync(socket), 10_000, 'nginx listening');
  } catch (err) {
    await stop();
    throw err;
  }
  const dispatcher = new Agent({ connect: { socketPath: socket } });
  const viaNginx = ((input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(String(input instanceof Request ? input.url : input), { ...(init as object), dispatcher })) as unknown as typeof fetch;
  return {
    fetch: viaNginx,
    async stop() {
      await dispatcher.close();
      await stop();
    },
  };
}

describe.skipIf(!NGINX)("replicas behind nginx, with the repository's deploy/nginx.conf", () => {
  afterAll(stopAll);

  it('round-robins one session over three replicas and keeps serving when one stops', async () => {
    const upstream = await startHttpFixture('faulty-server');
    const replicas = await startReplicas(upstream.url, ['n1', 'n2', 'n3']);
    const nginx = await startNginx(replicas);
    try {
      const client = new Client({ name: 'nginx-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
      const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), { fetch: nginx.fetch });
      await client.connect(transport);
      const counts: string[] = [];
      for (let i = 0; i < 6; i++) counts.push(text(await client.callTool({ name: 'bump', arguments: {} })));
      expect(replicas.filter((r) => r.stderr().includes('session resumed from its token')).length).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(text(await client.callTool({ name: 'elicit', arguments: { message: 'who?' } })))).toMatchObject({
        content: { name: 'Ada' },
      });

      expect(await replicas[0].stop()).toBe(0);
      for (let i = 0; i < 4; i++) counts.push(text(await client.callTool({ name: 'bump', arguments: {} })));
      expect(counts).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
      await transport.terminateSession();
      await client.close();
    } finally {
      await nginx.stop();
    }
  }, 60_000);

  it('serves a task from whichever replica a request reaches, and says clearly when the replica holding it is gone', async () => {
    const upstream = await startHttpFixture('faulty-server');
    const [a, b] = await startReplicas(upstream.url, ['t1', 't2']);
    const nginx = await startNginx([a, b]);
    const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    let id = 1;
    const send = async (post: typeof fetch, url: string, method: string, params: Record<string, unknown>) => {
      const m = modern(id++, method, params, caps);
      const res = await post(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...m.headers },
        body: JSON.stringify(m.body),
      });
      return { status: res.status, ...(await read(res)).messages[0] };
    };
    const viaNginx = (method: string, params: Record<string, unknown>) => send(nginx.fetch, 'http://localhost/mcp', method, params);
    try {
      const created = await viaNginx('tools/call', { name: 'slow_progress', arguments: { steps: 6, delayMs: 250 } });
      expect(created.result.resultType).toBe('task');
      const taskId: string = created.result.taskId;
      let last: any;
      await eventually(
        async () => (last = (await viaNginx('tasks/get', { taskId })).result)?.status === 'completed',
        20_000,
        'the task completes',
      );
      expect(last.result.content[0].text).toBe('done 6');
      // nginx spread the polls over both replicas: each answered tasks/get (the other one by forwarding).
      const polled = (r: Running) => logEntries(r).filter((e) => e.msg === 'request' && e.rpc === 'tasks/get').length;
      await eventually(() => polled(a) > 0 && polled(b) > 0, 5000, 'both replicas served tasks/get');

      // A task held by a replica that is gone is lost with it, and the answer says so.
      const held = await send(fetch, a.url, 'tools/call', { name: 'slow_progress', arguments: { steps: 100, delayMs: 200 } });
      expect(held.result.resultType).toBe('task');
      expect(await a.stop()).toBe(0);
      const lost = await send(fetch, b.url, 'tasks/get', { taskId: held.result.taskId });
      expect(lost.error).toMatchObject({
        code: -32602,
        message: expect.stringMatching(/replica holding it \("t1"\) cannot be reached.*start the call again/),
      });
    } finally {
      await nginx.stop();
    }
  }, 60_000);

  it('counts a client by the address nginx saw, whatever X-Forwarded-For it sends (the shipped replica example)', async () => {
    const upstream = await startHttpFixture('faulty-server');
    // The shipped replica configuration, with a per-client session limit of 2 to hit.
    const example = parse(readFileSync(`${ROOT}config/examples/everything-replicas.yaml`, 'utf8'));
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-forged-')), 'replica.yaml');
    writeFileSync(file, stringify({ ...example, listen: { ...example.listen, perClient: { sessions: 2 } } }));
    const replica = await startProxy(['--config', file, '--host', '127.0.0.1'], {
      UPSTREAM_URL: upstream.url,
      BALANCER_ADDRESS: '127.0.0.1',
      MCP_PROXY_LOG_LEVEL: 'info',
    });
    const nginx = await startNginx([replica]);
    try {
      const init = (forged: string) =>
        nginx.fetch('http://localhost/mcp', {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-forwarded-for': forged },
          body: JSON.stringify(INIT),
        });
      const statuses: number[] = [];
      for (const forged of ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4, 198.51.100.7'])
        statuses.push((await init(forged)).status);
      expect(statuses).toEqual([200, 200, 429, 429]);
      const addresses = () =>
        logEntries(replica)
          .filter((e) => e.msg === 'request')
          .map((e) => e.address as string);
      await eventually(() => addresses().length >= 4, 5000, 'an access-log line per request');
      expect(addresses().filter((a) => /203\.0\.113|198\.51/.test(a))).toEqual([]);
    } finally {
      await nginx.stop();
    }
  }, 60_000);
});
