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
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { PROXY_ERROR_CODES } from '../../src/jsonrpc/errors.js';
import { NEGOTIATION } from '../helpers/modern-clients.js';
import { callTool, modern, rawPost, rawSession } from '../helpers/raw.js';
import { commandLine, fixtureArgv, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { FUZZ_RUNS, fuzzParams } from './settings.js';

const HOSTILE = 'hostile-server.mjs';
const JSON_TAGS = { extensions: { [NEGOTIATION]: { features: ['format=json'] } } };
const DEFINED = new Set<string>(PROXY_ERROR_CODES);

/** Every message of a POST's body, each read strictly: JSON, and no member written twice. */
function strictMessages(text: string, contentType: string | null): any[] {
  const texts = contentType?.includes('text/event-stream') ? text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => l.slice(6)) : [text];
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
  if (answer.error.data?.code !== undefined && answer.error.data?.upstreamCode === undefined) expect(DEFINED.has(answer.error.data.code), `${what}: ${answer.error.data.code}`).toBe(true);
}

const upstreams: Array<[string, () => Promise<string>]> = [
  ['legacy stdio', async () => commandLine(fixtureArgv(HOSTILE))],
  ['legacy HTTP', async () => (await startHttpFixture(HOSTILE)).url],
  ['2026-07-28 stdio', async () => commandLine(fixtureArgv(HOSTILE, '--era', 'modern'))],
  ['2026-07-28 HTTP', async () => (await startHttpFixture(HOSTILE, {}, ['--era', 'modern'])).url],
];

describe('fuzz: a hostile upstream', () => {
  afterAll(stopAll);

  it.each(upstreams)('in front of a %s server, every client gets strict JSON and an answer, and the proxy keeps serving', async (_name, upstream) => {
    const proxy: Running = await startProxy(['--upstream', await upstream()]);
    const sessions = { plain: await rawSession(proxy.url), json: await rawSession(proxy.url, JSON_TAGS) };
    let id = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), fc.constantFrom('legacy', 'modern'), fc.boolean(), async (seed, era, negotiates) => {
        const n = ++id;
        const what = `seed ${seed}, ${era} client${negotiates ? ' with format=json' : ''}`;
        const reply = era === 'modern'
          ? await (async () => {
              const { body, headers } = modern(n, 'tools/call', { name: 'chaos', arguments: { seed } }, negotiates ? JSON_TAGS : {});
              return rawPost(proxy.url, body, headers, AbortSignal.timeout(15_000));
            })()
          : await rawPost(proxy.url, callTool(n, 'chaos', { seed }), negotiates ? sessions.json : sessions.plain, AbortSignal.timeout(15_000));
        const messages = strictMessages(reply.text, reply.headers.get('content-type'));
        checkAnswer(messages.find((m) => m.id === n), what);
      }),
      { ...fuzzParams, numRuns: Math.ceil(FUZZ_RUNS / 5) }, // each case is a real call through the proxy
    );
    expect(proxy.proc.exitCode).toBeNull();
    expect((await fetch(new URL('/healthz', proxy.url))).status).toBe(200);
    const { body, headers } = modern(++id, 'tools/call', { name: 'ok', arguments: {} });
    expect((await rawPost(proxy.url, body, headers)).messages[0].result.content[0].text).toBe('survived: ok');
    await proxy.stop();
  }, 240_000);
});
