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
  EmptyResultSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { progressOf, receivedDuring } from '../helpers/clients.js';
import { commandLine, eventually, fixtureArgv, logged, startProxy, stopAll, type Running } from '../helpers/processes.js';

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0].text;

/** A proxy whose legacy sessions share pooled faulty-server processes (`pool`: modern.pool), once its start-up check is over. */
async function sharedProxy(pool: string, extra = ''): Promise<Running> {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-shared-')), 'proxy.yaml');
  const command = JSON.stringify(commandLine(fixtureArgv('faulty-server')));
  writeFileSync(file, `upstream:\n  command: ${command}\n  sessions: shared\nmodern:\n  pool: ${pool}\n${extra}`);
  const proxy = await startProxy(['--config', file]);
  // The start-up check runs a process of its own; the counts in the tests start once it is gone.
  await logged(proxy, (e) => e.msg === 'upstream ready', 20_000, 'the start-up check');
  return proxy;
}

describe('upstream.sessions: shared', () => {
  let proxy: Running;
  const clients: Client[] = [];

  const connect = async (capabilities: Record<string, unknown> = {}) => {
    const client = new Client({ name: 'shared-test', version: '1' }, { capabilities });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    clients.push(client);
    return client;
  };

  beforeAll(async () => void (proxy = await sharedProxy('{ warmSpare: false }')), 30_000);
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

    // loud set info, quiet set error (and then a level that does not exist, refused), unset set none: it hears
    // what the server sends, as a client with a session of its own does.
    const [loud, quiet, unset] = [await connect(), await connect(), await connect()];
    const heard = { loud: [] as string[], quiet: [] as string[], unset: [] as string[] };
    for (const [name, client] of Object.entries({ loud, quiet, unset }))
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard[name as 'loud'].push(String(n.params.data)));
    await loud.setLoggingLevel('info');
    await quiet.setLoggingLevel('error');
    await expect(quiet.setLoggingLevel('loudest' as 'info')).rejects.toThrow(/-32602.*unknown log level "loudest"/);
    // Each message comes on its call's stream, before the call's result.
    await quiet.callTool({ name: 'log', arguments: { level: 'warning', message: 'for nobody' } });
    await unset.callTool({ name: 'log', arguments: { level: 'debug', message: 'for unset' } });
    await loud.callTool({ name: 'log', arguments: { level: 'warning', message: 'for loud' } });
    await eventually(() => heard.loud.length === 1 && heard.unset.length === 1, 5000, 'log messages');
    expect(heard).toEqual({ loud: ['for loud'], quiet: [], unset: ['for unset'] });
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

  it('refuses a subscription without a string uri with -32602', async () => {
    const client = await connect();
    for (const method of ['resources/subscribe', 'resources/unsubscribe'])
      await expect(client.request({ method, params: { uri: 7 } }, EmptyResultSchema)).rejects.toThrow(
        new RegExp(`-32602.*${method} needs params.uri`),
      );
  });

  it('refuses more than 100 subscriptions per session with -32602', async () => {
    const client = await connect();
    for (let i = 0; i < 100; i++) await client.subscribeResource({ uri: `faulty://many/${i}` });
    await expect(client.subscribeResource({ uri: 'faulty://many/100' })).rejects.toThrow(/-32602.*at most 100 resources/);
    await client.subscribeResource({ uri: 'faulty://many/0' }); // one it has: nothing changes
    await client.unsubscribeResource({ uri: 'faulty://many/0' });
    await client.subscribeResource({ uri: 'faulty://many/100' });
    // Another session of the same principal has a limit of its own.
    await (await connect()).subscribeResource({ uri: 'faulty://many/101' });
  });
});

describe('upstream.sessions: shared, with one pooled session', () => {
  let proxy: Running;
  const clients: Client[] = [];
  beforeAll(async () => void (proxy = await sharedProxy('{ maxSessions: 1, warmSpare: false }', 'timeouts:\n  requestMs: 4000\n')), 30_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('gives the pooled session back once a first subscription is refused: a call that needs it alone still gets it', async () => {
    const client = new Client({ name: 'shared-one', version: '1' }, { capabilities: { elicitation: { form: {} } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    clients.push(client);
    await expect(client.subscribeResource({ uri: 'elsewhere://x' })).rejects.toThrow(/-32602.*No such resource/);
    // A client that may be asked for input calls with the pooled session alone: it waited for the held one before.
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'alone' } });
    expect(text(echoed)).toBe('alone');
  });
});
