/**
 * Input rounds of modern calls with `replicas.secret` set (the production setting), in front of
 * a legacy server over HTTP and over stdio (the faulty-server fixture). The server's requests
 * during a call reach the client as `input_required` rounds whether they are related to the call
 * (its POST stream) or sent apart (the server's own elicitInput, createMessage and listRoots: the
 * session's GET stream over HTTP): each kind, two rounds in one call, and a task that asks. A
 * listener hears what the server sends apart from any call.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import { commandLine, eventually, fixtureArgv, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { modern, rawPost, sseMessages } from '../helpers/raw.js';

const SECRET = 'input-rounds-test-secret-0123456789abcdef';
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} }, sampling: {}, roots: {} };
/** Long enough for any round here; far shorter than the proxy's request timeout, so a lost request fails the test instead of hanging it. */
const CALL_MS = 10_000;
const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0].text;

describe.each(['http', 'stdio'] as const)('modern input rounds with a secret set, %s upstream', (kind) => {
  let proxy: Running;
  let client: ModernConnected;
  let nextId = 1;

  /** A raw modern request; its first message. */
  async function send(method: string, params: Record<string, unknown>, caps: Record<string, unknown> = TASKS): Promise<any> {
    const m = modern(nextId++, method, params, caps);
    return (await rawPost(proxy.url, m.body, m.headers, AbortSignal.timeout(CALL_MS))).messages[0];
  }

  beforeAll(async () => {
    const upstream = kind === 'http' ? (await startHttpFixture('faulty-server')).url : commandLine(fixtureArgv('faulty-server'));
    // A call from a client that declares tasks becomes one at once; the others are answered as usual.
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-rounds-')), 'proxy.yaml');
    writeFileSync(file, 'modern:\n  tasks:\n    answerWithinMs: 0\n    pollIntervalMs: 100\n');
    proxy = await startProxy(['--config', file, '--upstream', upstream], { MCP_PROXY_SECRET: SECRET });
    client = await connectModern('http', { url: proxy.url });
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await stopAll();
  });

  it('bridges a request related to the call and each kind the server sends apart, to the final result', async () => {
    const related = await client.client.callTool({ name: 'elicit', arguments: { message: 'who?' } }, { timeout: CALL_MS });
    expect(JSON.parse(text(related))).toEqual({ action: 'accept', content: { name: 'x' } });

    const apart = async (kinds: string[]) =>
      JSON.parse(text(await client.client.callTool({ name: 'ask_apart', arguments: { kinds } }, { timeout: CALL_MS })));
    expect(await apart(['elicit'])).toEqual([{ action: 'accept', content: { name: 'x' } }]);
    expect(await apart(['sample'])).toMatchObject([{ role: 'assistant', content: { type: 'text', text: 'sampled: Say hi' } }]);
    expect(await apart(['roots'])).toEqual([{ roots: [{ uri: 'file:///tmp/negotiate-proxy-test', name: 'test-root' }] }]);
    expect(client.received['roots/list']).toHaveLength(1);
  });

  it('asks two rounds in one call, each with its own requestState', async () => {
    const params = { name: 'ask_apart', arguments: { kinds: ['elicit', 'sample'] } };
    const caps = { elicitation: { form: {} }, sampling: {} };
    const first = (await send('tools/call', params, caps)).result;
    expect(first.resultType).toBe('input_required');
    expect(Object.values(first.inputRequests).map((r: any) => r.method)).toEqual(['elicitation/create']);
    const [k1] = Object.keys(first.inputRequests);
    const second = (
      await send(
        'tools/call',
        { ...params, requestState: first.requestState, inputResponses: { [k1]: { action: 'accept', content: { name: 'Ada' } } } },
        caps,
      )
    ).result;
    expect(second.resultType).toBe('input_required');
    expect(Object.values(second.inputRequests).map((r: any) => r.method)).toEqual(['sampling/createMessage']);
    expect(second.requestState).not.toBe(first.requestState);
    const [k2] = Object.keys(second.inputRequests);
    const sampled = { role: 'assistant', content: { type: 'text', text: 'hello' }, model: 'm' };
    const done = (await send('tools/call', { ...params, requestState: second.requestState, inputResponses: { [k2]: sampled } }, caps))
      .result;
    expect(done.resultType).toBe('complete');
    expect(JSON.parse(text(done))).toMatchObject([{ action: 'accept', content: { name: 'Ada' } }, { content: { text: 'hello' } }]);
  });

  it('asks inside a task, apart from the call, and finishes with the answer', async () => {
    const created = (await send('tools/call', { name: 'ask_apart', arguments: { kinds: ['elicit'] } })).result;
    expect(created.resultType).toBe('task');
    let state: any;
    await eventually(
      async () => (state = (await send('tasks/get', { taskId: created.taskId })).result).status === 'input_required',
      CALL_MS,
      'the task asks',
    );
    const [key] = Object.keys(state.inputRequests);
    expect(
      (await send('tasks/update', { taskId: created.taskId, inputResponses: { [key]: { action: 'accept', content: { name: 'Grace' } } } }))
        .result,
    ).toEqual({ resultType: 'complete' });
    await eventually(
      async () => (state = (await send('tasks/get', { taskId: created.taskId })).result).status === 'completed',
      CALL_MS,
      'the task completes',
    );
    expect(JSON.parse(text(state.result))).toEqual([{ action: 'accept', content: { name: 'Grace' } }]);
  });

  it('tells a listener of a task each status change, its state inlined as tasks/get shows it', async () => {
    const created = (await send('tools/call', { name: 'ask_apart', arguments: { kinds: ['elicit'] } })).result;
    expect(created.resultType).toBe('task');
    const listen = modern(nextId++, 'subscriptions/listen', { notifications: { taskIds: [created.taskId] } }, TASKS);
    const abort = new AbortController();
    const res = await fetch(proxy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...listen.headers },
      body: JSON.stringify(listen.body),
      signal: abort.signal,
    });
    try {
      const stream = sseMessages(res);
      const ack = await stream.next((m) => m.method === 'notifications/subscriptions/acknowledged');
      expect(ack.params.notifications).toEqual({ taskIds: [created.taskId] });
      const status = (s: string) => stream.next((m) => m.method === 'notifications/tasks' && m.params.status === s);
      const asking = await status('input_required');
      const [key] = Object.keys(asking.params.inputRequests);
      expect(asking.params).toMatchObject({ taskId: created.taskId, _meta: { 'io.modelcontextprotocol/subscriptionId': listen.body.id } });
      await send('tasks/update', { taskId: created.taskId, inputResponses: { [key]: { action: 'accept', content: { name: 'Lin' } } } });
      const done = await status('completed');
      expect(JSON.parse(text(done.params.result))).toEqual([{ action: 'accept', content: { name: 'Lin' } }]);
      const { _meta: _m, ...shown } = done.params;
      expect(shown).toEqual(await send('tasks/get', { taskId: created.taskId }).then((r) => (({ resultType: _r, ...t }) => t)(r.result)));
      expect(stream.messages.filter((m) => m.method === 'notifications/tasks').map((m) => m.params.status)).toEqual(
        expect.arrayContaining(['input_required', 'working', 'completed']),
      );
    } finally {
      abort.abort();
    }
  });

  it('tells a listener what the server sends apart from any call', async () => {
    const listener = await connectModern('http', { url: proxy.url }, { input: false });
    try {
      let heard = 0;
      listener.client.setNotificationHandler('notifications/tools/list_changed', () => void heard++);
      const sub = await listener.client.listen({ toolsListChanged: true });
      expect(sub.honoredFilter).toEqual({ toolsListChanged: true });
      // `announce` answers, then sends tools/list_changed related to no request (over HTTP: the GET stream).
      expect(text(await listener.client.callTool({ name: 'announce', arguments: {} }, { timeout: CALL_MS }))).toBe('announced');
      await eventually(() => heard > 0, CALL_MS, 'tools/list_changed to reach the listener');
      await sub.close();
    } finally {
      await listener.close();
    }
  });
});
