/**
 * What the proxy holds for clients that are away has a budget (listen.heldBytes), through a real
 * proxy in front of the faulty fixture over stdio, each client on its own loopback address:
 * finished task results nobody fetched, resumable streams whose client dropped them, modern calls
 * waiting for the client's input. Past a client's share the oldest held item goes, and says so;
 * a resumable stream keeps no event larger than its maxBytes; a task's input round too large to
 * repeat on every poll is not put to the client.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modernFrom, postAndDrop, postFrom, sessionFrom, TASKS, tasksFrom } from '../helpers/from-address.js';
import { commandLine, eventually, fixtureArgv, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { metricValue } from '../helpers/raw.js';

const MiB = 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), 'proxy-held-'));
let nextId = 1;

function config(name: string, yaml: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\n${yaml}`);
  return file;
}

const held = (proxy: Running, kind: string) => metricValue(proxy.url, `mcp_proxy_held_bytes{kind="${kind}"}`);
const dropped = (proxy: Running, kind: string) => metricValue(proxy.url, `mcp_proxy_held_dropped_total{kind="${kind}"}`);

describe('tasks whose client is away', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--config', config('tasks', 'modern:\n  tasks: { answerWithinMs: 0 }\n')]);
  });
  afterAll(stopAll);

  it("keeps a client's newest results within its 32 MiB share; an older one's tasks/get says it was dropped", async () => {
    const from = '127.0.0.2';
    const { ids } = await tasksFrom(from, proxy.url, 40, 2 * MiB);
    expect(ids).toHaveLength(40);
    const states: any[] = [];
    // Every task has finished (none is working) before their states are read.
    for (const taskId of ids.slice(-8)) {
      await eventually(
        async () => (await modernFrom(from, proxy.url, nextId++, 'tasks/get', { taskId }, TASKS)).msg.result?.status !== 'working',
        20_000,
        'the task finishes',
      );
    }
    for (const taskId of ids) states.push((await modernFrom(from, proxy.url, nextId++, 'tasks/get', { taskId }, TASKS)).msg);
    const completed = states.filter((s) => s.result?.status === 'completed');
    // 15 results of 2 MiB (and their JSON) fit in 32 MiB: the newest.
    expect(completed.length).toBe(15);
    expect(states.slice(-15).every((s) => s.result?.status === 'completed' && s.result.result.content[0].text.length === 2 * MiB + 6)).toBe(
      true,
    );
    const gone = states.filter((s) => s.result?.status === 'failed');
    expect(gone.length).toBeGreaterThan(0);
    expect(gone[0].result.error).toMatchObject({ code: -32603, data: { code: 'HELD_BYTES_EXCEEDED' } });
    expect(gone[0].result.statusMessage).toMatch(/result is no longer kept.*listen\.heldBytes/);
    expect(gone[0].result.result).toBeUndefined();
    expect(await held(proxy, 'task_result')).toBeLessThanOrEqual(32 * MiB);
    expect(await held(proxy, 'task_result')).toBeGreaterThan(30 * MiB);
    // Another client's share is its own.
    const { ids: other } = await tasksFrom('127.0.0.3', proxy.url, 1, 1000);
    await eventually(
      async () =>
        (await modernFrom('127.0.0.3', proxy.url, nextId++, 'tasks/get', { taskId: other[0] }, TASKS)).msg.result?.status === 'completed',
      20_000,
      "the other client's task completes",
    );
  }, 60_000);

  it("does not repeat a task's oversized input round on every poll: the upstream hears it was too large", async () => {
    const from = '127.0.0.8';
    const caps = { ...TASKS, elicitation: { form: {} } };
    const created = await modernFrom(
      from,
      proxy.url,
      nextId++,
      'tools/call',
      { name: 'elicit', arguments: { message: 'm'.repeat(3 * MiB) } },
      caps,
    );
    expect(created.msg.result.resultType).toBe('task');
    const polls: Array<{ bytes: number; msg: any }> = [];
    await eventually(
      async () => {
        const poll = await modernFrom(from, proxy.url, nextId++, 'tasks/get', { taskId: created.msg.result.taskId }, caps);
        polls.push(poll);
        return poll.msg.result.status !== 'working';
      },
      20_000,
      'the task finishes',
    );
    expect(polls.every((p) => p.bytes < 64 * 1024)).toBe(true);
    const done = polls.at(-1)!.msg.result;
    expect(done.status).toBe('completed');
    expect(done.result.content[0].text).toMatch(/elicitation failed: .*modern\.maxInputRequestBytes/);
  });
});

describe('resumable streams whose client went away', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--config', config('streams', '')]);
  });
  afterAll(stopAll);

  const call = (id: number, bytes: number, delayMs = 1000) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'slow_progress', arguments: { steps: 1, delayMs, resultBytes: bytes }, _meta: { progressToken: `p${id}` } },
  });
  const resume = (session: Record<string, string>, lastEventId: string) =>
    fetch(proxy.url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': lastEventId } });

  it("gives up a client's oldest held streams past its share, as if their window had ended", async () => {
    const from = '127.0.0.4';
    const sessions = [await sessionFrom(from, proxy.url), await sessionFrom(from, proxy.url)];
    const drops: Array<{ session: Record<string, string>; lastEventId: string }> = [];
    for (let i = 0; i < 16; i++) {
      const session = sessions[i % 2];
      drops.push({ session, ...(await postAndDrop(from, proxy.url, call(100 + i, 3 * MiB), session)) });
    }
    // All 16 answers came while their client was away: 48 MiB, of which 32 may be held.
    await eventually(
      async () =>
        (await metricValue(proxy.url, 'mcp_proxy_upstream_request_duration_seconds_count{method="tools/call",outcome="ok"}')) === 16,
      20_000,
      'the upstream answered every call',
    );
    await eventually(async () => (await dropped(proxy, 'stream')) >= 6, 10_000, 'the oldest streams given up');
    expect(await held(proxy, 'stream')).toBeLessThanOrEqual(32 * MiB);
    const statuses: number[] = [];
    for (const d of drops) {
      const res = await resume(d.session, d.lastEventId);
      statuses.push(res.status);
      if (res.status === 200) expect(await res.text()).toContain(`done 1${'x'.repeat(100)}`);
      else expect((await res.json()).error.message).toMatch(/cannot be resumed/);
    }
    expect(statuses[0]).toBe(400);
    expect(statuses.at(-1)).toBe(200);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(await held(proxy, 'stream')).toBe(0); // resumed, or given up
  }, 60_000);
});

describe('resumable streams under a small maxBytes and in-flight limit', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy([
      '--config',
      config('small', 'listen:\n  resumableStreams: { maxBytes: 1048576 }\n  perClient: { inFlight: 2 }\n'),
    ]);
  });
  afterAll(stopAll);

  const call = (id: number, bytes: number, delayMs: number) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'slow_progress', arguments: { steps: 1, delayMs, resultBytes: bytes }, _meta: { progressToken: `s${id}` } },
  });

  it('keeps no event larger than maxBytes: an answer bigger than that is not held, and the resume is refused', async () => {
    const session = await sessionFrom('127.0.0.5', proxy.url);
    const { lastEventId } = await postAndDrop('127.0.0.5', proxy.url, call(1, 3 * MiB, 300), session);
    // The proxy has the answer once it has counted the upstream's reply (the first call of this proxy).
    await eventually(
      async () =>
        (await metricValue(proxy.url, 'mcp_proxy_upstream_request_duration_seconds_count{method="tools/call",outcome="ok"}')) === 1,
      10_000,
      'the upstream answered',
    );
    const res = await fetch(proxy.url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': lastEventId } });
    expect(res.status).toBe(400);
    expect(await held(proxy, 'stream')).toBeLessThan(4096);
  });

  it('counts a held stream as a request of its client in flight until it is resumed', async () => {
    const from = '127.0.0.6';
    const session = await sessionFrom(from, proxy.url);
    const first = await postAndDrop(from, proxy.url, call(10, 10, 20_000), session);
    await postAndDrop(from, proxy.url, call(11, 10, 20_000), session);
    const refused = await postFrom(from, proxy.url, { jsonrpc: '2.0', id: 12, method: 'ping' }, session);
    expect(refused.status).toBe(429);
    expect(refused.messages[0].error.message).toMatch(/in flight/);
    // Resumed, the stream is the client's GET: the place in flight is free again.
    const abort = new AbortController();
    const resumed = await fetch(proxy.url, {
      headers: { ...session, accept: 'text/event-stream', 'last-event-id': first.lastEventId },
      signal: abort.signal,
    });
    expect(resumed.status).toBe(200);
    expect((await postFrom(from, proxy.url, { jsonrpc: '2.0', id: 13, method: 'ping' }, session)).status).toBe(200);
    abort.abort();
  });
});

describe('modern calls waiting for their client', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy([
      '--config',
      config('rounds', 'listen:\n  heldBytes: { perClient: 8388608 }\nmodern:\n  tasks: { answerWithinMs: 0 }\n'),
    ]);
  });
  afterAll(stopAll);

  it("gives up a client's oldest waiting call past its share: its retry finds nothing to resume", async () => {
    const from = '127.0.0.7';
    const caps = { elicitation: { form: {} } };
    const params = (i: number) => ({ name: 'elicit', arguments: { message: `who is ${i}?`, pad: 'p'.repeat(3 * MiB) } });
    const rounds: any[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await modernFrom(from, proxy.url, nextId++, 'tools/call', params(i), caps);
      expect(r.msg.result.resultType).toBe('input_required');
      rounds.push(r.msg.result);
    }
    await eventually(async () => (await dropped(proxy, 'input_round')) === 1, 5000, 'the oldest call given up');
    expect(await held(proxy, 'input_round')).toBeLessThanOrEqual(8 * MiB);
    const retry = (i: number) => {
      const [key] = Object.keys(rounds[i].inputRequests);
      return modernFrom(
        from,
        proxy.url,
        nextId++,
        'tools/call',
        { ...params(i), requestState: rounds[i].requestState, inputResponses: { [key]: { action: 'accept', content: { name: `n${i}` } } } },
        caps,
      );
    };
    expect((await retry(0)).msg.error).toMatchObject({ code: -32602, message: expect.stringMatching(/No call is waiting/) });
    for (const i of [1, 2]) expect((await retry(i)).msg.result.content[0].text).toContain(`n${i}`);
    expect(await held(proxy, 'input_round')).toBe(0);
  });
});
