/**
 * URL-mode elicitation for modern clients in front of a legacy server: the server's -32042
 * (URLElicitationRequiredError) becomes an input_required round asking the client to open the
 * URL; the retry that accepts sends the request upstream again. A client that cannot open URLs,
 * one that declines, and one that alters the state each get a clear error; legacy clients get
 * the server's error as it came.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, modern, rawPost, rawSession } from '../helpers/raw.js';
import { startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';

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
      inputRequests: { 'url-1': { method: 'elicitation/create', params: { mode: 'url', url: 'https://auth.example/connect?ticket=ada', message: 'Connect your account to continue.' } } },
    });
    expect(first.result.inputRequests['url-1'].params.elicitationId).toBeUndefined();
    const done = await call({ arguments: { ticket: 'ada' }, requestState: first.result.requestState, inputResponses: { 'url-1': { action: 'accept' } } });
    expect(done.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'connected ada' }] });
  });

  it('refuses a client that cannot open URLs, one that declines, and a state that was altered', async () => {
    const noUrl = await call({ arguments: { ticket: 'bob' } }, { elicitation: { form: {} } });
    expect(noUrl.status).toBe(400);
    expect(noUrl.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } });

    const round = await call({ arguments: { ticket: 'cy' } });
    const declined = await call({ arguments: { ticket: 'cy' }, requestState: round.result.requestState, inputResponses: { 'url-1': { action: 'decline' } } });
    expect(declined.error).toMatchObject({ code: -32603, data: { upstreamCode: -32042 } });
    const otherArgs = await call({ arguments: { ticket: 'dee' }, requestState: round.result.requestState, inputResponses: { 'url-1': { action: 'accept' } } });
    expect(otherArgs.error.code).toBe(-32602);
    const altered = await call({ arguments: { ticket: 'cy' }, requestState: `${round.result.requestState.slice(0, -3)}AAA`, inputResponses: { 'url-1': { action: 'accept' } } });
    expect(altered.error.code).toBe(-32602);
  });

  it('relays the server error to a legacy client as it came', async () => {
    const session = await rawSession(proxy.url, URL_CAPS);
    const reply = await rawPost(proxy.url, callTool(7, 'connect', { ticket: 'eve' }), session);
    expect(reply.messages[0].error).toMatchObject({ code: -32042, data: { elicitations: [{ mode: 'url', elicitationId: 'eve', url: 'https://auth.example/connect?ticket=eve' }] } });
  });
});
