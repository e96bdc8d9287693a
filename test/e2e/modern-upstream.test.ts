/**
 * A 2026-07-28-only server behind the proxy (the v2 SDK with `legacy: 'reject'`,
 * test/fixtures/modern-server.ts): the proxy finds its era, is ready, and serves legacy (v1 SDK)
 * and modern (v2 SDK) clients in front of it, over HTTP and stdio: negotiation, input rounds
 * both ways, sealed requestState, progress, rejections, listen streams, and the proxy's own
 * tasks (the server offers none).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ElicitRequestSchema,
  EmptyResultSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModern, NEGOTIATION } from '../helpers/modern-clients.js';
import {
  commandLine,
  eventually,
  fixtureArgv,
  PROXY_MAIN,
  startHttpFixture,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { modern, rawPost, sseMessages } from '../helpers/raw.js';

type Front = 'http' | 'stdio';

/** A v1 client through the proxy; `features`: content-negotiation tags; `elicit`: answers elicitation with this name. */
async function legacyClient(
  front: Front,
  target: { proxyUrl: string; upstreamArg: string },
  o: { features?: string[]; elicit?: string } = {},
): Promise<{ client: Client; asked: unknown[]; close(): Promise<void> }> {
  const capabilities: Record<string, unknown> = {};
  if (o.elicit !== undefined) capabilities.elicitation = { form: {} };
  if (o.features) capabilities.extensions = { [NEGOTIATION]: { version: '1.0', features: o.features } };
  const client = new Client({ name: 'legacy-in-front-of-modern', version: '1.0.0' }, { capabilities });
  const asked: unknown[] = [];
  if (o.elicit !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return { action: 'accept', content: { name: o.elicit! } };
    });
  }
  const transport =
    front === 'http'
      ? new StreamableHTTPClientTransport(new URL(target.proxyUrl))
      : new StdioClientTransport({
          command: process.execPath,
          args: [PROXY_MAIN, '--stdio', '--upstream', target.upstreamArg, '--log-level', 'warn'],
          env: { ...process.env } as Record<string, string>,
          stderr: 'pipe',
        });
  await client.connect(transport);
  return { client, asked, close: () => client.close() };
}

const textOf = (result: any): string => result.content.map((c: { text?: string }) => c.text ?? '').join('');

for (const kind of ['http', 'stdio'] as const)
  describe(`a 2026-07-28-only server behind the proxy (${kind} upstream)`, () => {
    let upstream: Running | undefined;
    let proxy: Running;
    let target: { proxyUrl: string; upstreamArg: string };

    beforeAll(async () => {
      if (kind === 'http') upstream = await startHttpFixture('modern-server');
      const upstreamArg = upstream?.url ?? commandLine(fixtureArgv('modern-server'));
      proxy = await startProxy(['--upstream', upstreamArg]);
      target = { proxyUrl: proxy.url, upstreamArg };
    }, 60_000);

    afterAll(async () => {
      await proxy?.stop();
      await upstream?.stop();
      await stopAll();
    });

    it('is ready in front of it, naming the era (an HTTP upstream is asked server/discover; a stdio one is found when it refuses initialize)', async () => {
      if (upstream) {
        const direct = await rawPost(
          upstream.url,
          {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
          },
          { accept: 'application/json, text/event-stream' },
        );
        expect(direct.status).toBe(400);
        expect(direct.messages[0].error.code).toBe(-32022);
      }
      await eventually(
        async () => JSON.stringify(await (await fetch(new URL('/healthz', proxy.url))).json()).includes('"era":"modern"'),
        20_000,
        'era modern in /healthz',
      );
      expect((await fetch(new URL('/readyz', proxy.url))).status).toBe(200);
    }, 30_000);

    for (const front of ['http', 'stdio'] as const) {
      describe(`a v1 client (${front} front)`, () => {
        it('lists and calls tools; the result carries nothing of the modern era', async () => {
          const { client, close } = await legacyClient(front, target);
          try {
            expect(client.getServerVersion()).toMatchObject({ name: 'modern-fixture' });
            expect(client.getInstructions()).toBe('A 2026-07-28-only fixture.');
            const { tools } = await client.listTools();
            expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'weather_json', 'ask_name']));
            const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
            expect(textOf(result)).toBe('hi');
            // The proxy writes the Mcp-Param-* header the tool asks for; without it the server refuses the call.
            expect(textOf(await client.callTool({ name: 'in_region', arguments: { region: 'eu west ü' } }))).toBe('region eu west ü');
            expect(textOf(await client.callTool({ name: 'in_place', arguments: { place: { region: 'north' } } }))).toBe('place north');
            expect(result).not.toHaveProperty('resultType');
            expect(result).not.toHaveProperty('ttlMs');
            expect(JSON.stringify(result)).not.toContain('io.modelcontextprotocol/serverInfo');
          } finally {
            await close();
          }
        }, 30_000);

        it('with format=json gets structuredContent from a JSON-text result', async () => {
          const { client, close } = await legacyClient(front, target, { features: ['agent', 'format=json'] });
          try {
            const result = await client.callTool({ name: 'weather_json', arguments: { city: 'Oslo' } });
            expect(result.structuredContent).toMatchObject({ city: 'Oslo', temperature_c: 8 });
          } finally {
            await close();
          }
        }, 30_000);

        it("answers the server's input_required rounds as elicitation/create, the second with the server's requestState", async () => {
          const { client, asked, close } = await legacyClient(front, target, { elicit: 'Ada' });
          try {
            const hello = await client.callTool({ name: 'ask_name', arguments: {} });
            expect(textOf(hello)).toBe('Hello, Ada!');
            expect(asked).toHaveLength(1);
            expect(asked[0]).toMatchObject({
              message: 'What is your name?',
              requestedSchema: { properties: { name: { type: 'string' } } },
            });
            const twice = await client.callTool({ name: 'ask_twice', arguments: {} });
            expect(textOf(twice)).toBe('Ada Ada');
            expect(asked).toHaveLength(3);
          } finally {
            await close();
          }
        }, 30_000);

        // The v2 SDK's stdio server announces no changes (it has no event bus).
        it.runIf(kind === 'http')(
          'hears resource updates it subscribed to, and list changes, through the upstream listen stream',
          async () => {
            const { client, close } = await legacyClient(front, target);
            try {
              expect(client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
              const updated = new Promise((resolve) =>
                client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)),
              );
              const changed = new Promise((resolve) =>
                client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve(true)),
              );
              await client.subscribeResource({ uri: 'test://watched' });
              // The listen stream opens after the answer: touch until the update comes through.
              const touching = setInterval(() => void client.callTool({ name: 'touch', arguments: {} }).catch(() => undefined), 200);
              const listChanging = setInterval(
                () => void client.callTool({ name: 'change_tools', arguments: {} }).catch(() => undefined),
                200,
              );
              try {
                expect(await updated).toBe('test://watched');
                expect(await changed).toBe(true);
              } finally {
                clearInterval(touching);
                clearInterval(listChanging);
              }
              await client.unsubscribeResource({ uri: 'test://watched' });
            } finally {
              await close();
            }
          },
          30_000,
        );

        it("without elicitation gets the server's refusal as an error", async () => {
          const { client, close } = await legacyClient(front, target);
          try {
            await expect(client.callTool({ name: 'ask_name', arguments: {} })).rejects.toThrow(/-32021|capabilit/i);
            // The session goes on.
            expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'still here' } }))).toBe('still here');
          } finally {
            await close();
          }
        }, 30_000);
      });
    }

    it('a v1 client setting a log level the proxy does not know is refused with -32602, and keeps the one it set', async () => {
      const { client, close } = await legacyClient('http', target);
      try {
        await client.setLoggingLevel('error');
        await expect(client.setLoggingLevel('loudest' as 'error')).rejects.toThrow(/-32602.*unknown log level "loudest"/);
        // Its requests go on, with the level it set in their `_meta`.
        expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'still here' } }))).toBe('still here');
      } finally {
        await close();
      }
    });

    it('a v1 client is refused, as in shared sessions, a subscription without a string uri and more than 100, with -32602', async () => {
      const { client, close } = await legacyClient('http', target);
      try {
        for (const method of ['resources/subscribe', 'resources/unsubscribe'])
          await expect(client.request({ method, params: { uri: 7 } }, EmptyResultSchema)).rejects.toThrow(
            new RegExp(`-32602.*${method} needs params.uri`),
          );
        for (let i = 0; i < 100; i++) await client.subscribeResource({ uri: `test://many/${i}` });
        await expect(client.subscribeResource({ uri: 'test://many/100' })).rejects.toThrow(/-32602.*at most 100 resources/);
        await client.unsubscribeResource({ uri: 'test://many/0' });
        await client.subscribeResource({ uri: 'test://many/100' });
      } finally {
        await close();
      }
    });

    describe('a modern client', () => {
      it('(v2 SDK, pinned to 2026-07-28) lists and calls tools, and answers input_required rounds the server asks', async () => {
        const { client, received, close } = await connectModern('http', { url: proxy.url }, { mode: 'pin' });
        try {
          const { tools } = await client.listTools();
          expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'ask_name']));
          expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'modern hi' } }))).toBe('modern hi');
          expect(textOf(await client.callTool({ name: 'in_region', arguments: { region: 'eu' } }))).toBe('region eu');
          expect(textOf(await client.callTool({ name: 'in_place', arguments: { place: { region: 'south' } } }))).toBe('place south');
          expect(textOf(await client.callTool({ name: 'ask_name', arguments: {} }))).toBe('Hello, x!');
          expect(received['elicitation/create']).toHaveLength(1);
        } finally {
          await close();
        }
      }, 30_000);

      it("(v2 SDK) on a fresh proxy's stdio front, its first requests racing the start-up check, lists and calls tools", async () => {
        const { client, close } = await connectModern('stdio', { upstreamArg: target.upstreamArg }, { mode: 'pin' });
        try {
          expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
          expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'first' } }))).toBe('first');
        } finally {
          await close();
        }
      }, 30_000);

      it('(v2 SDK) with format=json gets structuredContent', async () => {
        const { client, close } = await connectModern('http', { url: proxy.url }, { mode: 'pin', features: ['agent', 'format=json'] });
        try {
          const result = await client.callTool({ name: 'weather_json', arguments: { city: 'Oslo' } });
          expect(result.structuredContent).toMatchObject({ city: 'Oslo', humidity_percent: 72 });
        } finally {
          await close();
        }
      }, 30_000);

      it("on the wire: discover is the server's plus the proxy's extensions and versions; the server's input_required, requestState and cache hints pass untouched", async () => {
        const discover = await rawPost(proxy.url, modern(1, 'server/discover').body, modern(1, 'server/discover').headers);
        const found = discover.messages[0].result;
        expect(found.supportedVersions).toEqual(expect.arrayContaining(['2026-07-28', '2025-11-25']));
        expect(found.capabilities.extensions).toHaveProperty([NEGOTIATION]);
        expect(found.capabilities.tools).toBeDefined();
        expect(found._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'modern-fixture' });
        const list = await rawPost(proxy.url, modern(2, 'tools/list').body, modern(2, 'tools/list').headers);
        expect(list.messages[0].result).toMatchObject({ resultType: 'complete', cacheScope: 'public' });
        // The server's 60 s, or what is left of it when an earlier listing is served from the list cache.
        expect(list.messages[0].result.ttlMs).toBeGreaterThan(30_000);
        expect(list.messages[0].result.ttlMs).toBeLessThanOrEqual(60_000);
        const caps = { elicitation: { form: {} } };
        const first = modern(3, 'tools/call', { name: 'ask_twice', arguments: {} }, caps);
        const round1 = (await rawPost(proxy.url, first.body, first.headers)).messages[0].result;
        expect(round1).toMatchObject({ resultType: 'input_required', inputRequests: { first: { method: 'elicitation/create' } } });
        const retry1 = modern(
          4,
          'tools/call',
          { name: 'ask_twice', arguments: {}, inputResponses: { first: { action: 'accept', content: { name: 'Grace' } } } },
          caps,
        );
        const round2 = (await rawPost(proxy.url, retry1.body, retry1.headers)).messages[0].result;
        // The server's requestState reaches the client sealed with the principal it was given to.
        expect(round2).toMatchObject({ resultType: 'input_required', inputRequests: { second: { method: 'elicitation/create' } } });
        expect(typeof round2.requestState).toBe('string');
        expect(round2.requestState).not.toContain('Grace');
        const tampered = modern(
          9,
          'tools/call',
          {
            name: 'ask_twice',
            arguments: {},
            requestState: `${round2.requestState.slice(0, -4)}AAAA`,
            inputResponses: { second: { action: 'accept', content: { name: 'Hopper' } } },
          },
          caps,
        );
        const refused = await rawPost(proxy.url, tampered.body, tampered.headers);
        expect(refused.messages[0].error).toMatchObject({ code: -32602, data: { code: 'INVALID_REQUEST_STATE' } });
        const retry2 = modern(
          5,
          'tools/call',
          {
            name: 'ask_twice',
            arguments: {},
            requestState: round2.requestState,
            inputResponses: { second: { action: 'accept', content: { name: 'Hopper' } } },
          },
          caps,
        );
        const done = (await rawPost(proxy.url, retry2.body, retry2.headers)).messages[0].result;
        expect(textOf(done)).toBe('Grace Hopper');
      });

      it("carries the server's requestState up to what fits sealed, and answers a larger one's round with an error that names the server", async () => {
        const caps = { elicitation: { form: {} } };
        const round = async (id: number, kb: number) =>
          (
            await rawPost(
              proxy.url,
              modern(id, 'tools/call', { name: 'big_state', arguments: { kb } }, caps).body,
              modern(id, 'tools/call', { name: 'big_state', arguments: { kb } }, caps).headers,
            )
          ).messages[0];
        const fits = await round(20, 700);
        expect(fits.result.resultType).toBe('input_required');
        const retry = modern(
          21,
          'tools/call',
          {
            name: 'big_state',
            arguments: { kb: 700 },
            requestState: fits.result.requestState,
            inputResponses: { go: { action: 'accept', content: { name: 'Ada' } } },
          },
          caps,
        );
        expect(textOf((await rawPost(proxy.url, retry.body, retry.headers)).messages[0].result)).toBe(
          `state of ${700 * 1024} characters came back`,
        );
        // 800 KiB seals to more than a requestState may be: the client is told now, and not blamed.
        const tooLarge = await round(22, 800);
        expect(tooLarge.error).toMatchObject({ code: -32603, data: { code: 'UPSTREAM_PROTOCOL' } });
        expect(tooLarge.error.message).toMatch(
          /^The upstream server sent a requestState of \d+ bytes, more than the proxy can carry .*at most \d+/,
        );
        expect(proxy.proc.exitCode).toBeNull();
      });

      it("relays the server's rejections with their status, and progress on the request's stream", async () => {
        const unknown = modern(6, 'tools/call', { name: 'ask_name', arguments: {} });
        const refused = await rawPost(proxy.url, unknown.body, unknown.headers);
        expect(refused.status).toBe(400);
        expect(refused.messages[0].error.code).toBe(-32021);
        const slow = modern(7, 'tools/call', { name: 'slow', arguments: { ms: 50 }, _meta: { progressToken: 'p1' } });
        const streamed = await rawPost(proxy.url, slow.body, { ...slow.headers, accept: 'application/json, text/event-stream' });
        expect(streamed.messages.find((m: any) => m.method === 'notifications/progress')?.params).toMatchObject({
          progressToken: 'p1',
          progress: 1,
        });
        expect(textOf(streamed.messages.at(-1).result)).toBe('slept 50 ms');
      });

      it('passes methods outside the revision to the server, which answers them (here: -32601 with 404)', async () => {
        for (const [id, method] of [
          [10, 'ping'],
          [11, 'x-example/extension-method'],
        ] as const) {
          const r = modern(id, method);
          const answer = await rawPost(proxy.url, r.body, r.headers);
          expect(answer.status).toBe(404);
          expect(answer.messages[0]).toMatchObject({ id, error: { code: -32601 } });
          expect(answer.messages[0].error.data?.code).toBeUndefined(); // the server's answer, not the proxy's
        }
      });

      it("passes subscriptions/listen through: the server's acknowledgement, tagged with the client's request id", async () => {
        const listen = modern(8, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
        const abort = new AbortController();
        const res = await fetch(proxy.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...listen.headers },
          body: JSON.stringify(listen.body),
          signal: abort.signal,
        });
        expect(res.headers.get('content-type')).toContain('text/event-stream');
        const ack = await sseMessages(res).next((m) => m.method === 'notifications/subscriptions/acknowledged');
        expect(ack.params._meta['io.modelcontextprotocol/subscriptionId']).toBe(8);
        abort.abort();
      });

      it("serves the proxy's own tasks (the server offers none): a long call becomes a task, polled to its result; another is cancelled", async () => {
        const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
        let id = 900;
        const send = async (method: string, params: Record<string, unknown>) => {
          const m = modern(id++, method, params, caps);
          return (await rawPost(proxy.url, m.body, m.headers)).messages.find((x) => x.id === m.body.id);
        };
        expect((await send('server/discover', {})).result.capabilities.extensions['io.modelcontextprotocol/tasks']).toEqual({});
        // Answered within modern.tasks.answerWithinMs (500 ms): no task.
        expect((await send('tools/call', { name: 'echo', arguments: { text: 'quick' } })).result).toMatchObject({
          resultType: 'complete',
          content: [{ text: 'quick' }],
        });

        const created = (await send('tools/call', { name: 'slow', arguments: { ms: 1500 } })).result;
        expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: expect.any(Number) });
        let last: any;
        await eventually(
          async () => {
            last = (await send('tasks/get', { taskId: created.taskId })).result;
            return last.status !== 'working';
          },
          15_000,
          'the task finishes',
        );
        expect(last).toMatchObject({
          resultType: 'complete',
          status: 'completed',
          result: { content: [{ type: 'text', text: 'slept 1500 ms' }] },
        });
        expect(last.result.resultType).toBeUndefined();

        const long = (await send('tools/call', { name: 'slow', arguments: { ms: 30_000 } })).result;
        expect(long).toMatchObject({ resultType: 'task', status: 'working' });
        expect((await send('tasks/cancel', { taskId: long.taskId })).result).toEqual({ resultType: 'complete' });
        // Cancelled at once: the upstream request was closed, not waited for.
        await eventually(
          async () => (await send('tasks/get', { taskId: long.taskId })).result.status === 'cancelled',
          5_000,
          'the task is cancelled',
        );
        const forged = await send('tasks/get', { taskId: `${long.taskId.slice(0, -4)}AAAA` });
        expect(forged.error).toMatchObject({ code: -32602, data: { code: 'TASK_NOT_FOUND' } });
      }, 30_000);

      it("asks inside the proxy's own task for the input the server's input_required rounds want, keeping the server's requestState", async () => {
        const file = join(mkdtempSync(join(tmpdir(), 'proxy-modern-tasks-')), 'proxy.yaml');
        writeFileSync(file, 'modern:\n  tasks:\n    answerWithinMs: 0\n    pollIntervalMs: 100\n');
        const at = await startProxy(['--config', file, '--upstream', target.upstreamArg]);
        try {
          const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} } };
          let id = 950;
          const send = async (method: string, params: Record<string, unknown>) => {
            const m = modern(id++, method, params, caps);
            return (await rawPost(at.url, m.body, m.headers)).messages.find((x) => x.id === m.body.id);
          };
          const created = (await send('tools/call', { name: 'ask_twice', arguments: {} })).result;
          expect(created).toMatchObject({ resultType: 'task', status: 'working' });
          const poll = async (until: (task: any) => boolean) => {
            let last: any;
            await eventually(
              async () => until((last = (await send('tasks/get', { taskId: created.taskId })).result)),
              15_000,
              'the task moves on',
            );
            return last;
          };
          const first = await poll((t) => t.status !== 'working');
          expect(first).toMatchObject({ status: 'input_required', inputRequests: { first: { method: 'elicitation/create' } } });
          await send('tasks/update', {
            taskId: created.taskId,
            inputResponses: { first: { action: 'accept', content: { name: 'Grace' } } },
          });
          const second = await poll((t) => t.status !== 'working' && t.inputRequests?.second !== undefined);
          expect(second).toMatchObject({ status: 'input_required', inputRequests: { second: { method: 'elicitation/create' } } });
          expect(JSON.stringify(second)).not.toContain('first=Grace'); // the server's requestState stays with the proxy
          await send('tasks/update', {
            taskId: created.taskId,
            inputResponses: { second: { action: 'accept', content: { name: 'Hopper' } } },
          });
          const done = await poll((t) => t.status !== 'working');
          expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Grace Hopper' }] } });
        } finally {
          await at.stop();
        }
      }, 45_000);
    });
  });
