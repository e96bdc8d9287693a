/**
 * Edges of how an answer is given, through the built proxy with real upstreams: a cancellation
 * that names no request cancels nothing; the proxy's own refusals while serving a modern request
 * take their code's HTTP status; an upstream's unknown method is a 404 to a modern client whatever
 * the upstream's era; a progress token that is neither a string nor an integer is refused (-32602)
 * in either era.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandLine, fixtureArgv, logged, ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { callTool, modern, rawPost, rawSession, sseMessages } from '../helpers/raw.js';

const VERBATIM = commandLine([process.execPath, `${ROOT}test/fixtures/verbatim-server.mjs`]);

afterAll(stopAll);

describe('a legacy client in front of a 2026-07-28 upstream (bridged)', () => {
  let proxy: Running;

  beforeAll(async () => {
    proxy = await startProxy([
      '--upstream',
      commandLine(fixtureArgv('matrix-modern-server')),
      '--request-timeout',
      '5000',
      '--log-level',
      'debug',
    ]);
  }, 30_000);

  it('ignores a notifications/cancelled without requestId, even while a request with id "" runs', async () => {
    const headers = await rawSession(proxy.url);
    const call = {
      jsonrpc: '2.0',
      id: '',
      method: 'tools/call',
      params: { name: 'slow_progress', arguments: { steps: 3, delayMs: 400 }, _meta: { progressToken: 'p' } },
    };
    const res = await fetch(proxy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(call),
    });
    const stream = sseMessages(res);
    await stream.next((m) => m.method === 'notifications/progress');
    const cancel = await rawPost(
      proxy.url,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { reason: 'names nothing' } },
      headers,
    );
    expect(cancel.status).toBe(202);
    const answer = await stream.next((m) => m.id === '');
    expect(answer.result?.content?.[0]?.text).toBe('done 3');
    await logged(proxy, (e) => e.msg === 'ignored a cancellation that names no request', 5000, 'the ignored cancellation logged');
  });
});

describe('a modern client: HTTP status of answers', () => {
  let legacy: Running;
  let modernUpstream: Running;

  beforeAll(async () => {
    [legacy, modernUpstream] = await Promise.all([
      startProxy(['--upstream', VERBATIM]),
      startProxy(['--upstream', commandLine(fixtureArgv('matrix-modern-server'))]),
    ]);
  }, 30_000);

  it('answers a refusal raised while serving the request with the status its code names (400), as before serving it', async () => {
    const forged = modern(1, 'tools/call', { name: 'odd', arguments: {}, requestState: 'forged', inputResponses: {} });
    const state = await rawPost(legacy.url, forged.body, forged.headers);
    expect(state.messages.at(-1).error).toMatchObject({ code: -32602, data: { code: 'INVALID_REQUEST_STATE' } });
    const tasks = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const unknown = modern(2, 'tasks/get', { taskId: 'forged' }, tasks);
    const task = await rawPost(legacy.url, unknown.body, unknown.headers);
    expect(task.messages.at(-1).error).toMatchObject({ code: -32602, data: { code: 'TASK_NOT_FOUND' } });
    expect({ state: state.status, task: task.status }).toEqual({ state: 400, task: 400 });
  });

  it("answers an upstream's -32601 with 404, from a legacy (pooled) and from a 2026-07-28 (passed-through) upstream alike", async () => {
    // Once the upstream's era is known, so that the answer is not already streaming (with 200) when it comes.
    const warm = modern(3, 'tools/list');
    await Promise.all([rawPost(legacy.url, warm.body, warm.headers), rawPost(modernUpstream.url, warm.body, warm.headers)]);
    // Neither fixture has prompts.
    const m = modern(4, 'prompts/list');
    const [fromLegacy, fromModern] = await Promise.all([
      rawPost(legacy.url, m.body, m.headers),
      rawPost(modernUpstream.url, m.body, m.headers),
    ]);
    expect(fromLegacy.messages.at(-1).error?.code).toBe(-32601);
    expect(fromModern.messages.at(-1).error?.code).toBe(-32601);
    expect({ legacy: fromLegacy.status, modern: fromModern.status }).toEqual({ legacy: 404, modern: 404 });
  });
});

describe('progress tokens that are neither a string nor an integer', () => {
  let proxy: Running;

  beforeAll(async () => {
    proxy = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server')), '--request-timeout', '5000']);
  }, 30_000);

  it('refuses such a request of a legacy client (-32602) at once, and serves the next', async () => {
    const headers = await rawSession(proxy.url);
    for (const [id, token] of [
      [1, { a: 1 }],
      [2, 1.5],
      [3, true],
    ] as const) {
      const call = {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'hi' }, _meta: { progressToken: token } },
      };
      const res = await rawPost(proxy.url, call, headers);
      expect(res.messages.at(-1)).toMatchObject({ id, error: { code: -32602, message: expect.stringContaining('progressToken') } });
    }
    const ok = await rawPost(proxy.url, callTool(4, 'echo', { text: 'hi' }), headers);
    expect(ok.messages.at(-1).result?.content?.[0]?.text).toBe('hi');
  });

  it('refuses such a request of a modern client (-32602, HTTP 400)', async () => {
    for (const [id, token] of [
      [5, { a: 1 }],
      [6, 1.5],
    ] as const) {
      const m = modern(id, 'tools/call', { name: 'echo', arguments: { text: 'hi' }, _meta: { progressToken: token } });
      const res = await rawPost(proxy.url, m.body, m.headers);
      expect(res.messages.at(-1)).toMatchObject({
        id,
        error: { code: -32602, message: expect.stringContaining('progressToken'), data: { code: 'INVALID_META' } },
      });
      expect(res.status).toBe(400);
    }
  });
});
