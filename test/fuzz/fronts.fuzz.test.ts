/**
 * Fuzzing the fronts end to end: a real proxy in front of the faulty fixture, fed generated
 * HTTP requests (bodies, headers, batches, both eras, GET and DELETE) and stdio lines.
 * Oracle: every request is answered (or its stream opened) within its timeout, never with a 5xx
 * other than the documented 503s, the proxy keeps serving, and once sessions idle out the
 * session and process counts are back to where they started.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { lineSplitter } from '../../src/jsonrpc/lines.js';
import { SSE_TYPE, mediaTypeOf } from '../../src/mcp/media-type.js';
import { MODERN } from '../helpers/modern-clients.js';
import { INIT, meta, metricValue, rawSession } from '../helpers/raw.js';
import { commandLine, eventually, fixtureArgv, PROXY_MAIN, startProxy, stopAll } from '../helpers/processes.js';
import { FUZZ_RUNS, fuzzParams } from './settings.js';

const FAULTY = commandLine(fixtureArgv('faulty-server'));
const META = meta();
/** A request is answered within this (the proxy's request timeout is 2 s). */
const ANSWER_WITHIN_MS = 10_000;

const tool = fc.constantFrom('echo', 'pid', 'garbage', 'trace', 'nope', '', 'flood');
const argumentsArb = fc.oneof(
  fc.constant({ text: 'fuzz' }),
  fc.constant({ count: 2, bytes: 10 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { maxKeys: 3 }),
);
const id = fc.oneof(fc.integer({ min: -5, max: 1e6 }), fc.string({ maxLength: 8 }));
const legacyMessage = fc.oneof(
  fc.record({ jsonrpc: fc.constant('2.0'), id, method: fc.constant('ping') }),
  fc.record({ jsonrpc: fc.constant('2.0'), id, method: fc.constant('tools/list') }),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id,
    method: fc.constant('tools/call'),
    params: fc.record({ name: tool, arguments: argumentsArb }),
  }),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id,
    method: fc.constantFrom('resources/list', 'prompts/list', 'logging/setLevel', 'completion/complete', 'vendor/x'),
    params: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue(), { maxKeys: 2 }),
  }),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    method: fc.constantFrom('notifications/initialized', 'notifications/cancelled', 'notifications/progress'),
    params: fc.record({ requestId: id }),
  }),
  fc.record({ jsonrpc: fc.constant('2.0'), id, result: fc.jsonValue() }),
  fc.constant(INIT),
);
const modernMessage = fc.record({
  jsonrpc: fc.constant('2.0'),
  id,
  method: fc.constantFrom('server/discover', 'tools/list', 'tools/call', 'ping', 'subscriptions/listen'),
  params: fc.record(
    {
      name: tool,
      arguments: argumentsArb,
      _meta: fc.oneof(fc.constant(META), fc.dictionary(fc.string({ maxLength: 40 }), fc.jsonValue(), { maxKeys: 3 })),
    },
    { requiredKeys: ['_meta'] },
  ),
});
/** A valid message with one member replaced or dropped. */
const mutated = fc
  .tuple(
    fc.oneof(legacyMessage, modernMessage),
    fc.constantFrom('jsonrpc', 'id', 'method', 'params', 'extra'),
    fc.option(fc.jsonValue(), { nil: undefined }),
  )
  .map(([m, key, value]) => {
    const copy: Record<string, unknown> = { ...m };
    if (value === undefined) delete copy[key];
    else copy[key] = value;
    return copy;
  });
const message = fc.oneof(legacyMessage, modernMessage, mutated);
/** A message with arrays or objects nested up to 5,000 deep somewhere in its params (too deep for the stack to serialize again). */
const deepMessage = fc
  .tuple(
    fc.oneof(legacyMessage, modernMessage),
    fc.integer({ min: 1, max: 5000 }),
    fc.constantFrom('[', '{"k":'),
    fc.constantFrom('arguments', '_meta', 'extra'),
  )
  .map(([m, depth, open, where]) => {
    const close = open === '[' ? ']' : '}';
    const nested = open.repeat(depth) + (open === '[' ? '' : '1') + close.repeat(depth);
    const text = JSON.stringify({ ...m, params: { ...('params' in m ? (m.params as object) : {}), [where]: '<deep>' } });
    return text.replace('"<deep>"', nested);
  });
const body = fc.oneof(
  { weight: 6, arbitrary: message.map((m) => JSON.stringify(m)) },
  { weight: 2, arbitrary: fc.array(message, { maxLength: 4 }).map((a) => JSON.stringify(a)) },
  { weight: 1, arbitrary: deepMessage },
  { weight: 1, arbitrary: fc.string() },
  { weight: 1, arbitrary: fc.json() },
);

describe('fuzz: the HTTP front', () => {
  afterAll(stopAll);

  it(
    `answers ${FUZZ_RUNS} generated requests in time, never with an undocumented 5xx, and frees what they held`,
    async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'fuzz-http-')), 'proxy.yaml');
      writeFileSync(
        file,
        [
          `upstream:\n  command: ${JSON.stringify(FAULTY)}\n  maxProcesses: 8`,
          'listen:\n  maxSessions: 50\n  perClient: { sessions: 100000, requestsPerSecond: 1000000, inFlight: 100000 }',
          'timeouts:\n  requestMs: 2000\n  initializeMs: 5000\n  sessionIdleMs: 1500',
        ].join('\n'),
      );
      const proxy = await startProxy(['--config', file]);
      const metric = (series: string) => metricValue(proxy.url, series);
      const live = [await rawSession(proxy.url), await rawSession(proxy.url)].map((h) => h['mcp-session-id']);
      /** Reported, not asserted: the proxy's memory before the fuzzing and once its sessions are gone. */
      const memory = async () =>
        `RSS ${((await metric('mcp_proxy_process_resident_memory_bytes')) / 2 ** 20).toFixed(0)} MB, heap ${((await metric('mcp_proxy_nodejs_heap_size_used_bytes')) / 2 ** 20).toFixed(0)} MB`;
      const memoryBefore = await memory();
      /** Mostly what a real client sends, sometimes not: most requests get past the header checks. */
      const often = <T>(usual: T, others: fc.Arbitrary<T>) =>
        fc.oneof({ weight: 5, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: others });
      const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });
      const headers = fc
        .record({
          'content-type': often('application/json', fc.constantFrom('text/plain', 'application/json; charset=utf-8', '')),
          accept: often(
            'application/json, text/event-stream',
            fc.constantFrom('application/json', 'text/event-stream', 'text/html', '*/*'),
          ),
          'mcp-protocol-version': maybe(fc.constantFrom('2025-11-25', '2025-11-25', MODERN, MODERN, '2025-03-26', '1999-01-01', '')),
          'mcp-session-id': maybe(often(live[0], fc.oneof(fc.constant(live[1]), fc.string({ maxLength: 40 })))),
          'mcp-method': maybe(fc.constantFrom('tools/call', 'tools/list', 'ping')),
          'mcp-name': maybe(fc.constantFrom('echo', 'pid', 'x')),
        })
        .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);
      const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      /** What well-behaved clients of each era send, with generated content; and anything at all. */
      const request = fc.oneof(
        fc.record({
          method: fc.constant('POST'),
          headers: fc.constantFrom(...live).map((sid) => ({ ...json, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sid })),
          body: fc.oneof(legacyMessage, fc.array(legacyMessage, { minLength: 1, maxLength: 4 })).map((m) => JSON.stringify(m)),
        }),
        fc.record({
          method: fc.constant('POST'),
          headers: fc.constant({ ...json, 'mcp-protocol-version': MODERN }),
          body: modernMessage.map((m) => JSON.stringify(m)),
        }),
        fc.record({
          method: fc.constant('POST'),
          headers: fc.constantFrom(
            { ...json, 'mcp-protocol-version': MODERN },
            { ...json, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': live[0] },
          ),
          body: deepMessage,
        }),
        fc
          .record({ method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'DELETE'), headers, body })
          // The two live sessions stay alive for the well-behaved requests: DELETE ends made-up ones.
          .map((r) =>
            r.method === 'DELETE' && live.includes(r.headers['mcp-session-id'])
              ? { ...r, headers: { ...r.headers, 'mcp-session-id': 'made-up' } }
              : r,
          ),
      );
      const statuses = new Map<number, number>();

      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const res = await fetch(proxy.url, {
            method: r.method,
            headers: r.headers,
            body: r.method === 'POST' ? r.body : undefined,
            signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
          });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          // A GET that opened a stream stays open by design: its head is the answer.
          if (mediaTypeOf(res.headers.get('content-type')) === SSE_TYPE && r.method === 'GET') await res.body?.cancel();
          else await res.text();
          expect(res.status < 500 || res.status === 503, `${r.method} ${r.body.slice(0, 200)} → ${res.status}`).toBe(true);
        }),
        fuzzParams,
      );
      expect((await fetch(new URL('/healthz', proxy.url))).status).toBe(200);
      // Sessions the fuzzing opened idle out; their upstream processes go with them.
      await eventually(async () => (await metric('mcp_proxy_sessions')) === 0, 20_000, 'every session idled out');
      await eventually(
        async () => (await metric('mcp_proxy_upstream_processes')) <= 2,
        20_000,
        'session processes gone (the pool may keep one and a spare)',
      );
      expect(proxy.stderr()).not.toMatch(/unhandled|uncaught/i);
      console.info(
        `HTTP front: ${FUZZ_RUNS} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; memory ${memoryBefore} before, ${await memory()} after`,
      );
    },
    60_000 + FUZZ_RUNS * 50,
  );
});

describe('fuzz: slow and vanishing HTTP clients', () => {
  afterAll(stopAll);
  const RUNS = Math.max(20, Math.round(FUZZ_RUNS / 5));

  it(
    `closes every one of ${RUNS} connections that trickle, stall or stop mid-request in bounded time, and keeps serving`,
    async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'fuzz-slow-')), 'proxy.yaml');
      writeFileSync(
        file,
        [
          `upstream:\n  command: ${JSON.stringify(FAULTY)}`,
          'listen:\n  connections: { headersTimeoutMs: 400, bodyTimeoutMs: 400 }\n  perClient: { sessions: 100000, requestsPerSecond: 1000000, inFlight: 100000 }',
          'timeouts:\n  requestMs: 1000',
        ].join('\n'),
      );
      const proxy = await startProxy(['--config', file]);
      const { hostname, port } = new URL(proxy.url);
      const session = (await rawSession(proxy.url))['mcp-session-id'];
      const head = (text: string, extra: string) =>
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n${extra}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n`;
      const plan = fc.record({
        body,
        extra: fc.constantFrom(
          '',
          `MCP-Protocol-Version: ${MODERN}\r\n`,
          `MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: ${session}\r\n`,
        ),
        cuts: fc.array(fc.integer({ min: 1, max: 400 }), { maxLength: 5 }),
        delays: fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 6, maxLength: 6 }),
        /** Stop sending after this many pieces (the rest never comes), or send everything. */
        stopAfter: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined, freq: 2 }),
      });
      const statuses = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(plan, async (p) => {
          const bytes = head(p.body, p.extra) + p.body;
          const pieces: string[] = [];
          let at = 0;
          for (const cut of [...p.cuts].sort((a, b) => a - b)) {
            pieces.push(bytes.slice(at, Math.max(at, cut)));
            at = Math.max(at, cut);
          }
          pieces.push(bytes.slice(at));
          const socket = connect(Number(port), hostname);
          let received = '';
          socket.on('data', (d) => (received += d.toString()));
          socket.on('error', () => undefined);
          const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
          const writing = (async () => {
            for (let i = 0; i < pieces.length && !socket.destroyed; i++) {
              if (p.stopAfter !== undefined && i >= p.stopAfter) return;
              await new Promise((r) => setTimeout(r, p.delays[i]));
              if (!socket.destroyed) socket.write(pieces[i]);
            }
          })();
          // Headers and body timeouts (400 ms each), a late answer (requestMs 1 s) and Node's check interval bound it.
          const limit = setTimeout(() => socket.destroy(new Error('not closed in time')), 8000);
          await Promise.all([closed, writing]);
          clearTimeout(limit);
          const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 'none';
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          expect(received === '' || /^HTTP\/1\.1 \d{3}/.test(received), received.slice(0, 100)).toBe(true);
          expect(status === 'none' || Number(status) < 500 || status === '503', `${status} for ${bytes.slice(0, 200)}`).toBe(true);
        }),
        { ...fuzzParams, numRuns: RUNS },
      );
      // Every connection is gone again; the proxy serves as before.
      await eventually(async () => (await metricValue(proxy.url, 'mcp_proxy_connections')) <= 1, 10_000, 'the fuzzed connections closed');
      expect((await fetch(new URL('/healthz', proxy.url))).status).toBe(200);
      expect(proxy.stderr()).not.toMatch(/unhandled|uncaught|internal error/i);
      console.info(`slow clients: ${RUNS} connections, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    },
    120_000 + FUZZ_RUNS * 100,
  );
});

describe('fuzz: the stdio front', () => {
  it(
    `answers every request among ${FUZZ_RUNS} generated lines and keeps serving`,
    async () => {
      const proc = spawn(process.execPath, [PROXY_MAIN, '--stdio', '--upstream', FAULTY], { stdio: ['pipe', 'pipe', 'pipe'] });
      const answered = new Set<string>();
      proc.stdout.on(
        'data',
        lineSplitter((l) => {
          const m = JSON.parse(l);
          for (const one of Array.isArray(m) ? m : [m]) if ('id' in one && one.id !== null) answered.add(String(one.id));
        }),
      );
      proc.stderr.resume();
      let next = 0;
      const expected: string[] = [];
      const write = (text: string) =>
        new Promise<void>((resolve) => (proc.stdin.write(`${text}\n`) ? resolve() : proc.stdin.once('drain', resolve)));
      const exited = new Promise((r) => proc.once('exit', r));
      try {
        await write(JSON.stringify(INIT));
        await fc.assert(
          fc.asyncProperty(fc.oneof(body, fc.constant('')), legacyMessage, async (line, request) => {
            await write(line.replace(/\n/g, ' '));
            // Between the noise, a request of our own with a unique id: it must be answered.
            if (!('method' in request) || !('id' in request) || request.method === 'initialize') return;
            const own = `own-${next++}`;
            expected.push(own);
            await write(JSON.stringify({ ...request, id: own }));
          }),
          fuzzParams,
        );
        await eventually(() => expected.every((i) => answered.has(i)), 30_000, `answers to all ${expected.length} requests of our own`);
        expect(proc.exitCode).toBeNull();
        proc.stdin.end(); // the proxy exits when its client closes stdin
      } catch (err) {
        proc.kill(); // SIGTERM: the proxy ends its upstream too
        throw err;
      } finally {
        await exited;
      }
    },
    60_000 + FUZZ_RUNS * 20,
  );
});
