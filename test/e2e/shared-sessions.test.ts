/**
 * `upstream.sessions: shared` through the proxy: many legacy client sessions over a few pooled
 * stdio processes, each client's requests, progress, input requests and log level still its own.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { progressOf, receivedDuring } from '../helpers/clients.js';
import { commandLine, eventually, fixtureArgv, logged, startProxy, stopAll, type Running } from '../helpers/processes.js';

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0].text;

describe('upstream.sessions: shared', () => {
  let proxy: Running;
  const clients: Client[] = [];

  const connect = async (capabilities: Record<string, unknown> = {}) => {
    const client = new Client({ name: 'shared-test', version: '1' }, { capabilities });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-shared-')), 'proxy.yaml');
    writeFileSync(
      file,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\n  sessions: shared\nmodern:\n  pool: { warmSpare: false }\n`,
    );
    proxy = await startProxy(['--config', file]);
    // The start-up check runs a process of its own; the counts below start once it is gone.
    await logged(proxy, (e) => e.msg === 'upstream ready', 20_000, 'the start-up check');
  }, 30_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('serves ten client sessions from one upstream process', async () => {
    const ten = await Promise.all(Array.from({ length: 10 }, () => connect()));
    const pids = await Promise.all(ten.map(async (c) => text(await c.callTool({ name: 'pid', arguments: {} }))));
    expect(new Set(pids).size).toBe(1);
    const echoed = await Promise.all(ten.map((c, i) => c.callTool({ name: 'echo', arguments: { text: `client ${i}` } })));
    expect(echoed.map(text)).toEqual(ten.map((_, i) => `client ${i}`));
    const health = await (await fetch(new URL('/healthz', proxy.url))).json();
    expect(health.upstream.processes).toBe(1);
    expect(health.sessions).toBeGreaterThanOrEqual(10);
  });

  it('keeps progress, input requests and the log level per client', async () => {
    const asker = await connect({ elicitation: { form: {} } });
    asker.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    expect(JSON.parse(text(await asker.callTool({ name: 'elicit', arguments: { message: 'who?' } })))).toMatchObject({
      content: { name: 'Ada' },
    });

    const { result, messages } = await receivedDuring(asker, () =>
      asker.callTool({ name: 'slow_progress', arguments: { steps: 3, delayMs: 1 } }, undefined, { onprogress: () => {} }),
    );
    expect(text(result)).toBe('done 3');
    expect(progressOf(messages)).toEqual(['1/3 step 1/3', '2/3 step 2/3', '3/3 step 3/3']);

    const [loud, quiet] = [await connect(), await connect()];
    const heard = { loud: [] as string[], quiet: [] as string[] };
    loud.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard.loud.push(String(n.params.data)));
    quiet.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard.quiet.push(String(n.params.data)));
    await loud.setLoggingLevel('info');
    await loud.callTool({ name: 'log', arguments: { level: 'warning', message: 'for loud' } });
    await quiet.callTool({ name: 'log', arguments: { level: 'warning', message: 'for nobody' } });
    await eventually(() => heard.loud.length === 1, 5000, 'log message');
    expect(heard).toEqual({ loud: ['for loud'], quiet: [] });
  });

  it('reference-counts resource subscriptions across the sessions sharing the upstream', async () => {
    const [a, b] = [await connect(), await connect()];
    const updates: string[] = [];
    a.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    await a.subscribeResource({ uri: 'faulty://counter' });
    await b.subscribeResource({ uri: 'faulty://counter' });
    await b.unsubscribeResource({ uri: 'faulty://counter' }); // a still subscribes: the upstream keeps the subscription
    await a.callTool({ name: 'bump', arguments: {} });
    await eventually(() => updates.length > 0, 5000, 'resource update');
    expect(updates[0]).toBe('faulty://counter');
    // A refused subscription is not counted: the next one asks the upstream again (and is refused again).
    for (const client of [a, b])
      await expect(client.subscribeResource({ uri: 'elsewhere://x' })).rejects.toThrow(/-32602.*No such resource: elsewhere:\/\/x/);
  });
});
