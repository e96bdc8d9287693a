/**
 * The tasks extension in front of @modelcontextprotocol/server-everything, a legacy server with
 * no tasks of its own, over the proxy's HTTP front: a long call becomes a task that is polled to
 * its result, cancelled upstream, or asks for input inside the task; and what another principal,
 * a forged id, a client without the extension or one with too many tasks get.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hashToken } from '../../src/fronts/http/auth.js';
import { modern, rawPost, sseMessages } from '../helpers/raw.js';
import { EVERYTHING_STDIO, commandLine, eventually, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} } };
const token = (who: string) => `${who}-token-0123456789`;

let proxy: Running;
let nextId = 1;

/** A modern request as `who`; its status and first message. */
async function send(who: string, method: string, params: Record<string, unknown>, caps: Record<string, unknown> = TASKS) {
  const m = modern(nextId++, method, params, caps);
  const reply = await rawPost(proxy.url, m.body, { ...m.headers, authorization: `Bearer ${token(who)}` });
  return { status: reply.status, ...reply.messages[0] };
}

/** A subscriptions/listen stream of `who` for the tasks `taskIds` name; `close` ends it. */
async function listen(who: string, taskIds: string[]) {
  const m = modern(nextId++, 'subscriptions/listen', { notifications: { taskIds } }, TASKS);
  const abort = new AbortController();
  const res = await fetch(proxy.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...m.headers,
      authorization: `Bearer ${token(who)}`,
    },
    body: JSON.stringify(m.body),
    signal: abort.signal,
  });
  return { id: m.body.id, stream: sseMessages(res), close: () => abort.abort() };
}

/** Polls the task until `done` says so; its last state. */
async function pollUntil(who: string, taskId: string, done: (task: any) => boolean): Promise<any> {
  let last: any;
  await eventually(
    async () => {
      last = (await send(who, 'tasks/get', { taskId })).result;
      return done(last);
    },
    20_000,
    `task state (last: ${JSON.stringify(last)?.slice(0, 300)})`,
  );
  return last;
}

describe('tasks in front of a legacy server', () => {
  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-tasks-')), 'proxy.yaml');
    const tokens = ['alice', 'bob'].map((p) => `    - { name: ${p}, sha256: ${hashToken(token(p))} }`).join('\n');
    // Every call from a client that declares tasks becomes one at once: the test sees each state.
    writeFileSync(
      file,
      `auth:\n  tokens:\n${tokens}\nmodern:\n  tasks:\n    answerWithinMs: 0\n    perClient: 3\n    pollIntervalMs: 200\n`,
    );
    proxy = await startProxy(['--config', file, '--upstream', commandLine(EVERYTHING_STDIO)]);
  });
  afterAll(stopAll);

  it('offers the extension, runs a long call as a task and keeps its result', async () => {
    const discover = await send('alice', 'server/discover', {});
    expect(discover.result.capabilities.extensions['io.modelcontextprotocol/tasks']).toEqual({});
    expect(discover.result.capabilities.tasks).toBeUndefined();

    const created = await send('alice', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000, pollIntervalMs: 200 });
    expect(created.result.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
    expect(created.result.content).toBeUndefined();
    const done = await pollUntil('alice', created.result.taskId, (t) => t.status !== 'working');
    expect(done).toMatchObject({ resultType: 'complete', status: 'completed', taskId: created.result.taskId });
    expect(done.result.content[0].text).toContain('Long running operation completed');
    // Kept after it finished.
    expect((await send('alice', 'tasks/get', { taskId: created.result.taskId })).result.status).toBe('completed');
  });

  it('cancels a running task upstream', async () => {
    const created = await send('alice', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 60 } });
    const ack = await send('alice', 'tasks/cancel', { taskId: created.result.taskId });
    expect(ack.result).toEqual({ resultType: 'complete' });
    expect(await pollUntil('alice', created.result.taskId, (t) => t.status !== 'working')).toMatchObject({ status: 'cancelled' });
    // Cancelling again, or a finished task, is acknowledged and changes nothing.
    expect((await send('alice', 'tasks/cancel', { taskId: created.result.taskId })).result).toEqual({ resultType: 'complete' });
  });

  it('asks for input inside the task and finishes with the answer', async () => {
    const created = await send('alice', 'tools/call', { name: 'trigger-elicitation-request', arguments: {} });
    expect(created.result.resultType).toBe('task');
    const asking = await pollUntil('alice', created.result.taskId, (t) => t.status === 'input_required');
    const [key, request] = Object.entries(asking.inputRequests as Record<string, { method: string; params: Record<string, any> }>)[0];
    expect(request.method).toBe('elicitation/create');
    expect(request.params.requestedSchema.properties).toBeDefined();
    const content = { name: 'Ada', contactInfo: 'ada@example.com', newsletter: true, role: 'Developer', color: 'blue' };
    const ack = await send('alice', 'tasks/update', {
      taskId: created.result.taskId,
      inputResponses: { [key]: { action: 'accept', content }, 'never-asked': { ignored: true } },
    });
    expect(ack.result).toEqual({ resultType: 'complete' });
    const done = await pollUntil('alice', created.result.taskId, (t) => t.status !== 'working' && t.status !== 'input_required');
    expect(done.status).toBe('completed');
    expect(JSON.stringify(done.result.content)).toContain('Ada');

    // Cancelled while it waits for input: the question is withdrawn and the task ends cancelled.
    const asked = await send('alice', 'tools/call', { name: 'trigger-elicitation-request', arguments: {} });
    await pollUntil('alice', asked.result.taskId, (t) => t.status === 'input_required');
    expect((await send('alice', 'tasks/cancel', { taskId: asked.result.taskId })).result).toEqual({ resultType: 'complete' });
    const cancelled = await pollUntil('alice', asked.result.taskId, (t) => t.status !== 'input_required');
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.inputRequests).toBeUndefined();
  });

  it('serves the official v2 client polling, answering and cancelling tasks', async () => {
    // The v2 client (2.4) sends tasks requests as the extension wants them (_meta, Mcp-Name), but
    // refuses a tools/call result whose resultType is "task": the call that creates each task is a plain POST.
    const client = new Client(
      { name: 'tasks-test', version: '1.0.0' },
      { capabilities: TASKS, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url), { requestInit: { headers: { authorization: `Bearer ${token('alice')}` } } }),
    );
    const any = z.looseObject({});
    const task = (method: string, params: Record<string, unknown>) => client.request({ method, params }, any) as Promise<any>;
    try {
      const asking = await send('alice', 'tools/call', { name: 'trigger-elicitation-request', arguments: {} });
      let state: any;
      await eventually(
        async () => (state = await task('tasks/get', { taskId: asking.result.taskId })).status === 'input_required',
        20_000,
        'the task asks',
      );
      const [key] = Object.keys(state.inputRequests);
      expect(
        await task('tasks/update', {
          taskId: asking.result.taskId,
          inputResponses: {
            [key]: {
              action: 'accept',
              content: { name: 'Grace', contactInfo: 'g@example.com', newsletter: false, role: 'Developer', color: 'red' },
            },
          },
        }),
      ).toEqual({}); // the ack (the client drops resultType)
      await eventually(
        async () => (state = await task('tasks/get', { taskId: asking.result.taskId })).status === 'completed',
        20_000,
        'the task completes',
      );
      expect(JSON.stringify(state.result.content)).toContain('Grace');

      const long = await send('alice', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 60 } });
      await task('tasks/cancel', { taskId: long.result.taskId });
      await eventually(
        async () => (await task('tasks/get', { taskId: long.result.taskId })).status === 'cancelled',
        20_000,
        'the task is cancelled',
      );
    } finally {
      await client.close();
    }
  });

  it('keeps a task to its principal, refuses forged ids, undeclared clients and too many tasks', async () => {
    const created = await send('alice', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } });
    const taskId: string = created.result.taskId;
    // Another principal cannot read, answer or cancel it: to them it does not exist.
    for (const method of ['tasks/get', 'tasks/cancel']) expect((await send('bob', method, { taskId })).error.code).toBe(-32602);
    expect((await send('bob', 'tasks/update', { taskId, inputResponses: {} })).error.code).toBe(-32602);
    expect((await send('alice', 'tasks/get', { taskId })).result.status).toBe('working');
    // A forged or altered id names nothing.
    const forged = taskId.slice(0, -4) + (taskId.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect((await send('alice', 'tasks/get', { taskId: forged })).error.code).toBe(-32602);
    expect((await send('alice', 'tasks/get', { taskId: 'not-a-task' })).error.code).toBe(-32602);
    // A request that does not declare the extension gets -32021, before any lookup.
    const undeclared = await send('alice', 'tasks/get', { taskId }, {});
    expect(undeclared.status).toBe(400);
    expect(undeclared.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
    // ...and a call from it is answered as usual, never as a task.
    expect((await send('alice', 'tools/call', { name: 'echo', arguments: { message: 'plain' } }, {})).result.content[0].text).toContain(
      'plain',
    );
    // Mcp-Name must mirror the task id.
    const m = modern(nextId++, 'tasks/get', { taskId }, TASKS);
    const mismatch = await rawPost(proxy.url, m.body, {
      ...m.headers,
      'mcp-name': 'another-task',
      authorization: `Bearer ${token('alice')}`,
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.messages[0].error.code).toBe(-32020);

    // perClient is 3: alice has one running; two more fit. The next call is answered as without
    // tasks; a tool that runs only as a task is refused until one ends.
    const more = [];
    for (let i = 0; i < 2; i++)
      more.push(
        (await send('alice', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } })).result
          .taskId,
      );
    const atLimit = await send('alice', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 1 } });
    expect(atLimit.result).toMatchObject({
      resultType: 'complete',
      content: [{ text: expect.stringContaining('Long running operation completed') }],
    });
    const refused = await send('alice', 'tools/call', { name: 'simulate-research-query', arguments: { topic: 'tasks' } });
    expect(refused.status).toBe(429);
    expect(refused.error.data.code).toBe('TOO_MANY_TASKS');
    // Bob's room is his own, and calls started at once cannot go past it either.
    const long = { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } };
    const together = await Promise.all([0, 1, 2, 3].map(() => send('bob', 'tools/call', long)));
    expect(together.filter((r) => r.result?.resultType === 'task').length).toBe(3);
    expect(together.filter((r) => r.result?.resultType === 'complete').length).toBe(1);
    for (const r of together) if (r.result) await send('bob', 'tasks/cancel', { taskId: r.result.taskId });
    for (const id of [taskId, ...more]) await send('alice', 'tasks/cancel', { taskId: id });
    await pollUntil('alice', more[1], (t) => t.status === 'cancelled');
    expect(
      (await send('alice', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 1 } })).result
        .resultType,
    ).toBe('task');
  });

  it("tells a listener each status change of its own tasks, never another principal's", async () => {
    const long = { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } };
    const mine: string = (await send('alice', 'tools/call', long)).result.taskId;
    const theirs: string = (await send('bob', 'tools/call', long)).result.taskId;
    const forged = mine.slice(0, -4) + (mine.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const alice = await listen('alice', [mine, theirs, forged, 'not-a-task']);
    try {
      const ack = await alice.stream.next((m) => m.method === 'notifications/subscriptions/acknowledged');
      expect(ack.params.notifications).toEqual({ taskIds: [mine] });
      const done = await alice.stream.next((m) => m.method === 'notifications/tasks' && m.params.status === 'completed');
      expect(done.params).toMatchObject({
        taskId: mine,
        ttlMs: 3_600_000,
        pollIntervalMs: 200,
        _meta: { 'io.modelcontextprotocol/subscriptionId': alice.id },
      });
      expect(done.params.result.content[0].text).toContain('Long running operation completed');
      // Bob's task has finished too, and Bob hears it; Alice heard nothing of it.
      await pollUntil('bob', theirs, (t) => t.status === 'completed');
      const bob = await listen('bob', [theirs]);
      try {
        expect((await bob.stream.next((m) => m.method === 'notifications/tasks')).params).toMatchObject({
          taskId: theirs,
          status: 'completed',
        });
      } finally {
        bob.close();
      }
      const told = alice.stream.messages.filter((m) => m.method === 'notifications/tasks');
      expect(told.map((m) => m.params.taskId)).toEqual(told.map(() => mine));
      expect(told.map((m) => m.params.status)).toEqual(['working', 'completed']);
    } finally {
      alice.close();
    }
    // Task status is part of the extension: a listen request that does not declare it is refused.
    const undeclared = modern(nextId++, 'subscriptions/listen', { notifications: { taskIds: [mine] } }, {});
    const refused = await rawPost(proxy.url, undeclared.body, { ...undeclared.headers, authorization: `Bearer ${token('alice')}` });
    expect(refused.messages.at(-1).error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
  });

  it('lets a task run past the request timeout, and forgets it ttlMs after its creation, cancelling it upstream if it still runs', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-tasks-ttl-')), 'proxy.yaml');
    writeFileSync(
      file,
      `auth:\n  tokens:\n    - { name: alice, sha256: ${hashToken(token('alice'))} }\ntimeouts:\n  requestMs: 1000\nmodern:\n  tasks:\n    answerWithinMs: 0\n    ttlMs: 4000\n    perClient: 1\n`,
    );
    const short = await startProxy(['--config', file, '--upstream', commandLine(EVERYTHING_STDIO)]);
    const post = async (method: string, params: Record<string, unknown>) => {
      const m = modern(nextId++, method, params, TASKS);
      return (await rawPost(short.url, m.body, { ...m.headers, authorization: `Bearer ${token('alice')}` })).messages[0];
    };
    // A call that says nothing for 2 s would time out as a request (1 s); as a task it has its TTL.
    const quiet = await post('tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 1 } });
    let state: any;
    await eventually(
      async () => (state = (await post('tasks/get', { taskId: quiet.result.taskId })).result).status !== 'working',
      10_000,
      'the quiet task ends',
    );
    expect(state.status).toBe('completed');

    const created = await post('tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 60 } });
    expect(created.result.ttlMs).toBe(4000);
    await eventually(
      async () => (await post('tasks/get', { taskId: created.result.taskId })).error?.code === -32602,
      10_000,
      'the task expires',
    );
    // It no longer counts against the client's one running task.
    expect(
      (await post('tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 1 } })).result.resultType,
    ).toBe('task');
  });
});

describe("a 2026-07-28 server's own tasks behind the proxy", () => {
  beforeAll(async () => {
    const upstream = await startHttpFixture('modern-tasks-server');
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-modern-tasks-')), 'proxy.yaml');
    const tokens = ['alice', 'bob'].map((p) => `    - { name: ${p}, sha256: ${hashToken(token(p))} }`).join('\n');
    writeFileSync(file, `auth:\n  tokens:\n${tokens}\n`);
    proxy = await startProxy(['--config', file, '--upstream', upstream.url]);
  });
  afterAll(stopAll);

  it('keeps each task to the principal it was given to, and tells a listener of its own tasks only', async () => {
    const slow = { name: 'slow', arguments: { ms: 1500 } };
    const created = await send('alice', 'tools/call', slow);
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const mine: string = created.result.taskId;
    const theirs: string = (await send('bob', 'tools/call', slow)).result.taskId;
    // The server's own ids never reach a client: each is sealed with its principal.
    expect(mine).not.toMatch(/^[0-9a-f-]{36}$/);
    expect((await send('alice', 'tasks/get', { taskId: mine })).result).toMatchObject({
      resultType: 'complete',
      taskId: mine,
      status: 'working',
    });
    for (const method of ['tasks/get', 'tasks/cancel']) expect((await send('alice', method, { taskId: theirs })).error.code).toBe(-32602);

    const alice = await listen('alice', [mine, theirs]);
    try {
      const ack = await alice.stream.next((m) => m.method === 'notifications/subscriptions/acknowledged');
      expect(ack.params.notifications).toEqual({ taskIds: [mine] });
      const done = await alice.stream.next((m) => m.method === 'notifications/tasks' && m.params.status === 'completed');
      expect(done.params).toMatchObject({
        taskId: mine,
        result: { content: [{ text: 'slept 1500 ms' }] },
        _meta: { 'io.modelcontextprotocol/subscriptionId': alice.id },
      });
      await pollUntil('bob', theirs, (t) => t.status === 'completed');
      expect(alice.stream.messages.filter((m) => m.method === 'notifications/tasks').map((m) => m.params.taskId)).toEqual([mine]);
    } finally {
      alice.close();
    }
  });
});
