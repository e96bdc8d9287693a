/**
 * Edges of how an answer is given, through the built proxy with real upstreams: a cancellation
 * that names no request cancels nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandLine, fixtureArgv, logged, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { rawPost, rawSession, sseMessages } from '../helpers/raw.js';

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
