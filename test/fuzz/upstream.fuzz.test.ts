/**
 * Fuzzing the upstream side: the proxy in front of a hostile server (test/fixtures/hostile-server.mjs,
 * both eras, stdio and HTTP) that answers each generated call with junk chosen by a seed (lines
 * nested 8,000 deep, invalid JSON, escaped members, 2 MB log messages, answers to nobody,
 * requests of its own) and then an answer that may itself be crafted or too deep. Clients of both
 * eras, negotiating nothing or format=json. Oracle: every message a client gets is strict JSON
 * without a member written twice; its call is answered, with a result or an error the proxy
 * defines; and the proxy keeps serving.
 */
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { PROXY_ERROR_CODES } from '../../src/jsonrpc/errors.js';
import { SSE_TYPE, mediaTypeOf } from '../../src/mcp/media-type.js';
import { NEGOTIATION } from '../helpers/modern-clients.js';
import { callTool, modern, rawSession } from '../helpers/raw.js';
import { commandLine, fixtureArgv, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { FUZZ_RUNS, fuzzParams } from './settings.js';

const HOSTILE = 'hostile-server.mjs';
const JSON_TAGS = { extensions: { [NEGOTIATION]: { features: ['format=json'] } } };
const DEFINED = new Set<string>(PROXY_ERROR_CODES);
/**
 * A connection per request: a kept-alive one that the proxy closes as idle while the next request
 * is being sent (a loaded machine, a slow case) would fail that request for no fault of the proxy's.
 */
const fresh = new Agent({ pipelining: 0 });

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<{ text: string; contentType: string | null }> {
  const res = await request(url, {
    method: 'POST',
    dispatcher: fresh,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  return { text: await res.body.text(), contentType: String(res.headers['content-type'] ?? '') };
}

/** Every message of a POST's body, each read strictly: JSON, and no member written twice. */
function strictMessages(text: string, contentType: string | null): any[] {
  const texts =
    mediaTypeOf(contentType) === SSE_TYPE
      ? text
          .split('\n')
          .filter((l) => l.startsWith('data: ') && l.length > 6)
          .map((l) => l.slice(6))
      : [text];
  return texts.map((t) => {
    const value: unknown = JSON.parse(t);
    parseYaml(t, { uniqueKeys: true, maxAliasCount: -1 });
    return value;
  });
}

/** An answer is a result or an error; the proxy's own errors carry a code it documents. */
function checkAnswer(answer: any, what: string): void {
  expect(answer, what).toBeDefined();
  if ('result' in answer) return void expect(typeof answer.result, what).toBe('object');
  expect(typeof answer.error?.code, what).toBe('number');
  expect(typeof answer.error?.message, what).toBe('string');
  if (answer.error.data?.code !== undefined && answer.error.data?.upstreamCode === undefined)
    expect(DEFINED.has(answer.error.data.code), `${what}: ${answer.error.data.code}`).toBe(true);
}

const upstreams: Array<[string, () => Promise<string>]> = [
  ['legacy stdio', async () => commandLine(fixtureArgv(HOSTILE))],
  ['legacy HTTP', async () => (await startHttpFixture(HOSTILE)).url],
  ['2026-07-28 stdio', async () => commandLine(fixtureArgv(HOSTILE, '--era', 'modern'))],
  ['2026-07-28 HTTP', async () => (await startHttpFixture(HOSTILE, {}, ['--era', 'modern'])).url],
];

describe('fuzz: a hostile upstream', () => {
  afterAll(async () => {
    await stopAll();
    await fresh.close();
  });

  it.each(upstreams)(
    'in front of a %s server, every client gets strict JSON and an answer, and the proxy keeps serving',
    async (_name, upstream) => {
      const proxy: Running = await startProxy(['--upstream', await upstream()]);
      const sessions = { plain: await rawSession(proxy.url), json: await rawSession(proxy.url, JSON_TAGS) };
      let id = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 2 ** 31 - 1 }),
          fc.constantFrom('legacy', 'modern'),
          fc.boolean(),
          async (seed, era, negotiates) => {
            const n = ++id;
            const what = `seed ${seed}, ${era} client${negotiates ? ' with format=json' : ''}`;
            const modernCall = modern(n, 'tools/call', { name: 'chaos', arguments: { seed } }, negotiates ? JSON_TAGS : {});
            const reply =
              era === 'modern'
                ? await post(proxy.url, modernCall.body, modernCall.headers)
                : await post(proxy.url, callTool(n, 'chaos', { seed }), negotiates ? sessions.json : sessions.plain);
            const messages = strictMessages(reply.text, reply.contentType);
            checkAnswer(
              messages.find((m) => m.id === n),
              what,
            );
          },
        ),
        { ...fuzzParams, numRuns: Math.ceil(FUZZ_RUNS / 5) }, // each case is a real call through the proxy
      );
      expect(proxy.proc.exitCode).toBeNull();
      expect((await fetch(new URL('/healthz', proxy.url))).status).toBe(200);
      const { body, headers } = modern(++id, 'tools/call', { name: 'ok', arguments: {} });
      expect(strictMessages((await post(proxy.url, body, headers)).text, 'application/json')[0].result.content[0].text).toBe(
        'survived: ok',
      );
      await proxy.stop();
    },
    240_000,
  );
});
