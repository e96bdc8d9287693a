/**
 * Everything a relay must carry, on all four transport combinations, against the faulty
 * fixture: pagination, subscriptions and resources/updated, list_changed, logging, completion,
 * progress ordering, cancellation reaching the upstream, server→client requests, unknown methods.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectDirect,
  connectViaProxy,
  progressOf,
  receivedDuring,
  type Connected,
  type Front,
  type UpstreamRef,
} from '../helpers/clients.js';
import { callStarted, commandLine, eventually, fixtureArgv, startHttpFixture, stopAll } from '../helpers/processes.js';

const COMBOS: Array<{ front: Front; upstream: 'stdio' | 'http' }> = [
  { front: 'http', upstream: 'stdio' },
  { front: 'http', upstream: 'http' },
  { front: 'stdio', upstream: 'stdio' },
  { front: 'stdio', upstream: 'http' },
];

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0].text;

describe.each(COMBOS)('faulty fixture, $front front ← $upstream upstream', ({ front, upstream }) => {
  const logFile = join(mkdtempSync(join(tmpdir(), 'proxy-faulty-')), 'cancel.log');
  const env = { FAULTY_LOG: logFile };
  let direct: Connected;
  let proxied: Connected;

  beforeAll(async () => {
    let ref: UpstreamRef = { argv: fixtureArgv('faulty-server') };
    let arg = commandLine(fixtureArgv('faulty-server'));
    if (upstream === 'http') {
      const [a, b] = await Promise.all([startHttpFixture('faulty-server', env), startHttpFixture('faulty-server', env)]);
      ref = { url: a.url };
      arg = b.url;
    }
    [direct, proxied] = await Promise.all([
      connectDirect(ref),
      connectViaProxy(front, arg, ['--request-timeout', '20000', '--env', 'FAULTY_LOG'], env),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([direct?.close(), proxied?.close()]);
    await stopAll();
  });

  it('relays pagination cursors: the same pages as directly, nothing lost or repeated', async () => {
    const pages = async (c: Connected) => {
      const out: unknown[] = [];
      let cursor: string | undefined;
      do {
        const page = await c.client.listResources(cursor ? { cursor } : {});
        out.push(page);
        cursor = page.nextCursor;
      } while (cursor);
      return out;
    };
    const [want, got] = await Promise.all([pages(direct), pages(proxied)]);
    expect(got).toEqual(want);
    expect(got.flatMap((p) => (p as { resources: Array<{ uri: string }> }).resources.map((r) => r.uri))).toEqual(
      [1, 2, 3, 4, 5].map((n) => `faulty://item/${n}`),
    );
  });

  it('delivers every progress notification before the result, in order', async () => {
    const { messages } = await receivedDuring(proxied.client, () =>
      proxied.client.callTool({ name: 'slow_progress', arguments: { steps: 5, delayMs: 20 } }, undefined, { onprogress: () => {} }),
    );
    const events = messages
      .filter((m) => m.method === 'notifications/progress' || m.result)
      .map((m) => (m.result ? text(m.result) : progressOf([m])[0]));
    expect(events).toEqual(['1/5 step 1/5', '2/5 step 2/5', '3/5 step 3/5', '4/5 step 4/5', '5/5 step 5/5', 'done 5']);
  });

  it('relays sampling, elicitation and roots requests and their answers', async () => {
    expect(text(await proxied.client.callTool({ name: 'sample', arguments: { prompt: 'hello' } }))).toBe('sampled: hello');
    expect(JSON.parse(text(await proxied.client.callTool({ name: 'elicit', arguments: { message: 'who?' } })))).toEqual({
      action: 'accept',
      content: { name: 'x' },
    });
    expect(JSON.parse(text(await proxied.client.callTool({ name: 'roots', arguments: {} })))).toEqual({
      roots: [{ uri: 'file:///tmp/negotiate-proxy-test', name: 'test-root' }],
    });
    expect(proxied.received['elicitation/create']).toEqual([expect.objectContaining({ message: 'who?' })]);
  });

  it('relays subscriptions, resources/updated, list_changed and log messages', async () => {
    const seen: string[] = [];
    proxied.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void seen.push(`updated ${n.params.uri}`));
    proxied.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void seen.push('tools changed'));
    proxied.client.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n) => void seen.push(`log ${n.params.level} ${n.params.data}`),
    );
    await proxied.client.subscribeResource({ uri: 'faulty://counter' });
    expect(text(await proxied.client.callTool({ name: 'bump', arguments: {} }))).toBe('1');
    expect(text(await proxied.client.callTool({ name: 'add_tool', arguments: { name: 'extra' } }))).toBe('added extra');
    await proxied.client.setLoggingLevel('info');
    await proxied.client.callTool({ name: 'log', arguments: { level: 'warning', message: 'careful' } });
    await eventually(() => seen.length >= 3, 5000, 'notifications');
    expect(seen).toEqual(['updated faulty://counter', 'tools changed', 'log warning careful']);
    expect((await proxied.client.listTools()).tools.map((t) => t.name)).toContain('extra');
    await proxied.client.unsubscribeResource({ uri: 'faulty://counter' });
  });

  it('relays completion, prompts and unknown methods (with the upstream error as is)', async () => {
    const args = { ref: { type: 'ref/prompt' as const, name: 'greet' }, argument: { name: 'name', value: 'Al' } };
    expect(await proxied.client.complete(args)).toEqual(await direct.client.complete(args));
    expect(await proxied.client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })).toEqual(
      await direct.client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } }),
    );
    const unknown = (c: Connected) =>
      c.client
        .request({ method: 'vendor/unknown', params: { x: 1 } }, z.object({}).passthrough())
        .catch((e) => ({ code: e.code, message: e.message }));
    expect(await unknown(proxied)).toEqual(await unknown(direct));
  });

  it('passes a client cancellation to the upstream and keeps the session usable', async () => {
    const abort = new AbortController();
    const call = proxied.client.callTool({ name: 'hang', arguments: {} }, undefined, { signal: abort.signal });
    await callStarted(logFile, { tool: 'hang' });
    abort.abort('test abort');
    await expect(call).rejects.toThrow();
    await eventually(() => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('test abort'), 5000, 'cancellation upstream');
    expect(text(await proxied.client.callTool({ name: 'echo', arguments: { text: 'still here' } }))).toBe('still here');
  });
});
