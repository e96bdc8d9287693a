/**
 * Edges of how an answer is given, through the built proxy with real upstreams: a cancellation
 * that names no request cancels nothing; the proxy's own refusals while serving a modern request
 * take their code's HTTP status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandLine, fixtureArgv, logged, ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { modern, rawPost, rawSession, sseMessages } from '../helpers/raw.js';

const VERBATIM = commandLine([process.execPath, `${ROOT}test/fixtures/verbatim-server.mjs`]);

afterAll(stopAll);

describe('a legacy client in front of a 2026-07-28 upstream (bridged)', () => {
  let proxy: Running;

  beforeAll(async () => {
    proxy = await startProxy(['--upstream', commandLine(fixtureArgv('matrix-modern-server')), '--request-timeout', '5000', '--log-level', 'debug']);
  }, 30_000);

  it('ignores a notifications/cancelled without requestId, even while a request with id "" runs', async () => {
    const headers = await rawSession(proxy.url);
    const call = { jsonrpc: '2.0', id: '', method: 'tools/call', params: { name: 'slow_progress', arguments: { steps: 3, delayMs: 400 }, _meta: { progressToken: 'p' } } };
    const res = await fetch(proxy.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(call) });
    const stream = sseMessages(res);
    await stream.next((m) => m.method === 'notifications/progress');
    const cancel = await rawPost(proxy.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { reason: 'names nothing' } }, headers);
    expect(cancel.status).toBe(202);
    const answer = await stream.next((m) => m.id === '');
    expect(answer.result?.content?.[0]?.text).toBe('done 3');
    await logged(proxy, (e) => e.msg === 'ignored a cancellation that names no request', 5000, 'the ignored cancellation logged');
  });
});

describe('a modern client: HTTP status of answers', () => {
  let legacy: Running;

  beforeAll(async () => {
    legacy = await startProxy(['--upstream', VERBATIM]);
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
});
