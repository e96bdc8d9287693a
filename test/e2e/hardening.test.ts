/**
 * Hostile single requests against a real proxy: documents nested deeper than
 * listen.maxJsonDepth, on every front and era, are refused before anything else runs, and the
 * proxy goes on serving everyone.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineSplitter } from '../../src/jsonrpc/lines.js';
import { connectViaProxy } from '../helpers/clients.js';
import { callTool, INIT, modern, rawPost, rawSession } from '../helpers/raw.js';
import { commandLine, eventually, fixtureArgv, logEntries, PROXY_MAIN, startProxy, stopAll, type Running } from '../helpers/processes.js';

const FAULTY = commandLine(fixtureArgv('faulty-server'));
/** A placeholder for arrays nested `depth` deep (a 10 KB body at 5,000): such a value cannot even be serialized here. */
const nested = (depth: number) => `<deep:${depth}>`;
/** The JSON text of `value` with its placeholders expanded. */
const text = (value: unknown) => JSON.stringify(value).replace(/"<deep:(\d+)>"/g, (_, d) => '['.repeat(Number(d)) + ']'.repeat(Number(d)));
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('documents nested too deep', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--upstream', FAULTY]);
  });
  afterAll(stopAll);

  it('refuses a modern tools/call nested 5,000 deep with -32600, and keeps serving', async () => {
    const deep = modern(1, 'tools/call', { name: 'echo', arguments: { text: 'x', deep: nested(5000) } });
    const reply = await rawPost(proxy.url, text(deep.body), deep.headers);
    expect(reply.status).toBe(400);
    // The id is readable (the parser does not recurse): the client hears which request failed.
    expect(reply.messages[0]).toMatchObject({ id: 1, error: { code: -32600, message: expect.stringContaining('listen.maxJsonDepth') } });
    const ok = modern(2, 'tools/call', { name: 'echo', arguments: { text: 'still here' } });
    expect((await rawPost(proxy.url, ok.body, ok.headers)).messages[0].result.content[0].text).toBe('still here');
  });

  it('refuses the same on a legacy session with a traceparent header, and the session goes on', async () => {
    const headers = await rawSession(proxy.url);
    const reply = await rawPost(proxy.url, text(callTool(1, 'echo', { text: 'x', deep: nested(5000) })), {
      ...headers,
      traceparent: TRACEPARENT,
    });
    expect(reply.status).toBe(400);
    expect(reply.messages[0]).toMatchObject({ id: 1, error: { code: -32600 } });
    const batch = await rawPost(proxy.url, text([callTool(2, 'echo', { text: 'a' }), callTool(3, 'echo', { deep: nested(65) })]), headers);
    expect(batch.messages[0].error.code).toBe(-32600); // the batch is refused whole
    const ok = await rawPost(proxy.url, text(callTool(4, 'echo', { text: 'fine', deep: nested(60) })), {
      ...headers,
      traceparent: TRACEPARENT,
    });
    expect(ok.messages[0].result.content[0].text).toBe('fine');
  });

  it('never logs a failure that nobody handled', () => {
    expect(logEntries(proxy).filter((e) => e.level >= 50)).toEqual([]);
    expect(proxy.proc.exitCode).toBeNull();
  });
});

describe('documents nested too deep on the stdio front', () => {
  it('answers -32600 for either era and relays what follows', async () => {
    const proc = spawn(process.execPath, [PROXY_MAIN, '--stdio', '--upstream', FAULTY], { stdio: ['pipe', 'pipe', 'pipe'] });
    const lines: any[] = [];
    proc.stdout.on(
      'data',
      lineSplitter((l) => lines.push(JSON.parse(l))),
    );
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise((r) => proc.once('exit', r));
    const send = (m: unknown) => proc.stdin.write(text(m) + '\n');
    try {
      send(modern(1, 'tools/call', { name: 'echo', arguments: { deep: nested(5000) } }).body);
      send(INIT);
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send(callTool(2, 'echo', { deep: nested(5000) }));
      send(callTool(3, 'echo', { text: 'after' }));
      await eventually(() => lines.length >= 4, 15_000, 'four answers');
      expect(lines.filter((l) => l.error).map((l) => [l.id, l.error.code])).toEqual([
        [1, -32600],
        [2, -32600],
      ]);
      expect(lines.find((l) => l.id === 3).result.content[0].text).toBe('after');
      expect(stderr).not.toMatch(/Maximum call stack|internal error/);
    } finally {
      proc.stdin.end();
      await exited;
    }
  });
});

describe('an SDK client whose request nests too deep', () => {
  it('gets the error for that request at once, on the stdio front, and goes on', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100; i++) deep = [deep];
    const connected = await connectViaProxy('stdio', FAULTY);
    try {
      // Answered with the request's id, so the SDK settles the call instead of waiting for its own timeout.
      await expect(
        connected.client.callTool({ name: 'echo', arguments: { text: 'x', deep } }, undefined, { timeout: 10_000 }),
      ).rejects.toThrow(/listen\.maxJsonDepth/);
      expect((await connected.client.callTool({ name: 'echo', arguments: { text: 'after' } })).content).toEqual([
        { type: 'text', text: 'after' },
      ]);
    } finally {
      await connected.close();
    }
  });
});
