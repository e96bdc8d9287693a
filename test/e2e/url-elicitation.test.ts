/**
 * URL-mode elicitation for modern clients in front of a legacy server: the server's -32042
 * (URLElicitationRequiredError) becomes an input_required round asking the client to open the
 * URL; the retry that accepts sends the request upstream again. A client that cannot open URLs,
 * one that declines, and one that alters the state each get a clear error; legacy clients get
 * the server's error as it came. Only https: and http: URLs reach a client, in every form a
 * server can ask (elicitation/create, -32042, an input_required round) and in every era.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, modern, rawPost, rawSession } from '../helpers/raw.js';
import { logged, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';

const URL_CAPS = { elicitation: { form: {}, url: {} } };
let proxy: Running;
let nextId = 1;

async function call(params: Record<string, unknown>, caps: Record<string, unknown> = URL_CAPS) {
  const m = modern(nextId++, 'tools/call', { name: 'connect', ...params }, caps);
  const reply = await rawPost(proxy.url, m.body, m.headers);
  return { status: reply.status, ...reply.messages[0] };
}

describe('URL-mode elicitation from a legacy server', () => {
  beforeAll(async () => {
    proxy = await startProxy(['--upstream', (await startHttpFixture('faulty-server')).url]);
  });
  afterAll(stopAll);

  it('asks the client to open the URL, and sends the request again once it accepts', async () => {
    const first = await call({ arguments: { ticket: 'ada' } });
    expect(first.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        'url-1': {
          method: 'elicitation/create',
          params: { mode: 'url', url: 'https://auth.example/connect?ticket=ada', message: 'Connect your account to continue.' },
        },
      },
    });
    expect(first.result.inputRequests['url-1'].params.elicitationId).toBeUndefined();
    const done = await call({
      arguments: { ticket: 'ada' },
      requestState: first.result.requestState,
      inputResponses: { 'url-1': { action: 'accept' } },
    });
    expect(done.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'connected ada' }] });
  });

  it('refuses a client that cannot open URLs, one that declines, and a state that was altered', async () => {
    const noUrl = await call({ arguments: { ticket: 'bob' } }, { elicitation: { form: {} } });
    // 400 when the refusal comes before the answer became a stream (after 100 ms, which a loaded machine can take); then 200.
    expect([400, 200]).toContain(noUrl.status);
    expect(noUrl.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } });

    const round = await call({ arguments: { ticket: 'cy' } });
    const declined = await call({
      arguments: { ticket: 'cy' },
      requestState: round.result.requestState,
      inputResponses: { 'url-1': { action: 'decline' } },
    });
    expect(declined.error).toMatchObject({ code: -32603, data: { upstreamCode: -32042 } });
    const otherArgs = await call({
      arguments: { ticket: 'dee' },
      requestState: round.result.requestState,
      inputResponses: { 'url-1': { action: 'accept' } },
    });
    expect(otherArgs.error.code).toBe(-32602);
    const altered = await call({
      arguments: { ticket: 'cy' },
      requestState: `${round.result.requestState.slice(0, -3)}AAA`,
      inputResponses: { 'url-1': { action: 'accept' } },
    });
    expect(altered.error.code).toBe(-32602);
  });

  it('relays the server error to a legacy client as it came', async () => {
    const session = await rawSession(proxy.url, URL_CAPS);
    const reply = await rawPost(proxy.url, callTool(7, 'connect', { ticket: 'eve' }), session);
    expect(reply.messages[0].error).toMatchObject({
      code: -32042,
      data: { elicitations: [{ mode: 'url', elicitationId: 'eve', url: 'https://auth.example/connect?ticket=eve' }] },
    });
  });
});

/** URLs a client must never be asked to open: each runs or reads something on the user's side. */
const UNSAFE = [
  'javascript:alert(document.cookie)',
  'file:///etc/passwd',
  'data:text/html,<script>alert(1)</script>',
  'JavaScript:void(0)',
];
const REFUSED =
  /The proxy refused a URL elicitation with a "(javascript|file|data):" URL \(only https: and http: URLs are put to clients\)/;

/** A v1 SDK client that can open URLs, recording what it is asked. */
async function urlClient(url: string): Promise<{ client: Client; asked: any[] }> {
  const client = new Client({ name: 'url-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {}, url: {} } } });
  const asked: any[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return { action: 'accept' };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, asked };
}

const textOf = (r: any): string => r.content.map((c: { text?: string }) => c.text ?? '').join('');

describe('URL elicitations with a scheme other than https: and http:', () => {
  afterAll(stopAll);

  it("refuses a legacy server's URL elicitation/create: the server gets an error, no client is asked, the refusal is logged", async () => {
    const proxy = await startProxy(['--upstream', (await startHttpFixture('faulty-server')).url]);
    const { client, asked } = await urlClient(proxy.url);
    // The server hears -32602 with the reason, and fails its call with it (as this one does).
    for (const url of UNSAFE)
      await expect(client.callTool({ name: 'elicit', arguments: { message: 'Open this', url } })).rejects.toThrow(REFUSED);
    expect(asked).toEqual([]);
    // A modern client's call is refused the same way: no round is asked.
    const m = modern(1, 'tools/call', { name: 'elicit', arguments: { message: 'Open this', url: UNSAFE[1] } }, URL_CAPS);
    const reply = (await rawPost(proxy.url, m.body, m.headers)).messages[0];
    expect(reply.error.message).toMatch(REFUSED);
    // A web URL still reaches the client.
    await client.callTool({ name: 'elicit', arguments: { message: 'Open this', url: 'http://auth.example/plain' } });
    expect(asked.map((p) => p.url)).toEqual(['http://auth.example/plain']);
    await logged(
      proxy,
      (e) => e.msg === 'refused an upstream request to the client' && /"javascript:"/.test(e.reason),
      5000,
      'the refusal logged',
    );
    await client.close();
  });

  it("answers a legacy server's -32042 naming such a URL with -32603 UPSTREAM_PROTOCOL, to modern and legacy clients", async () => {
    const proxy = await startProxy(['--upstream', (await startHttpFixture('faulty-server')).url]);
    const m = modern(1, 'tools/call', { name: 'connect', arguments: { ticket: 'js', url: UNSAFE[0] } }, URL_CAPS);
    const refused = (await rawPost(proxy.url, m.body, m.headers)).messages[0];
    expect(refused.error).toMatchObject({ code: -32603, data: { code: 'UPSTREAM_PROTOCOL' } });
    expect(refused.error.message).toMatch(/^The upstream asked for a URL elicitation with a "javascript:" URL/);
    const session = await rawSession(proxy.url, URL_CAPS);
    const legacy = (await rawPost(proxy.url, callTool(2, 'connect', { ticket: 'data', url: UNSAFE[2] }), session)).messages[0];
    expect(legacy.error).toMatchObject({ code: -32603, data: { code: 'UPSTREAM_PROTOCOL' } });
    expect(JSON.stringify(legacy)).not.toContain('data:text/html');
    // An http: URL is a web URL: asked for as before.
    const plain = modern(3, 'tools/call', { name: 'connect', arguments: { ticket: 'plain', url: 'http://auth.example/plain' } }, URL_CAPS);
    expect((await rawPost(proxy.url, plain.body, plain.headers)).messages[0].result.inputRequests['url-1'].params.url).toBe(
      'http://auth.example/plain',
    );
    await logged(proxy, (e) => e.msg === "refused an upstream's -32042 answer", 5000, 'the refusal logged');
  });

  it("refuses a 2026-07-28 server's input_required round with such a URL: a modern client gets -32603, a legacy one is never asked", async () => {
    const proxy = await startProxy(['--upstream', (await startHttpFixture('modern-server')).url]);
    const m = modern(1, 'tools/call', { name: 'ask_url', arguments: { url: UNSAFE[0] } }, URL_CAPS);
    const refused = (await rawPost(proxy.url, m.body, m.headers)).messages[0];
    expect(refused.error).toMatchObject({ code: -32603, data: { code: 'UPSTREAM_PROTOCOL' } });
    expect(refused.error.message).toMatch(/URL elicitation with a "javascript:" URL/);
    const { client, asked } = await urlClient(proxy.url);
    await expect(client.callTool({ name: 'ask_url', arguments: { url: UNSAFE[1] } })).rejects.toThrow(/URL elicitation with a "file:" URL/);
    expect(asked).toEqual([]);
    const opened = await client.callTool({ name: 'ask_url', arguments: { url: 'https://auth.example/ok' } });
    expect(textOf(opened)).toBe('opened: accept');
    expect(asked.map((p) => p.url)).toEqual(['https://auth.example/ok']);
    await logged(
      proxy,
      (e) => /refused an upstream answer that asks the client to open a URL|could not be relayed/.test(e.msg),
      5000,
      'the refusals logged',
    );
    await client.close();
  });
});
