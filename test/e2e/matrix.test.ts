/**
 * The era matrix: the same scenarios in every cell of {legacy client (v1 SDK), modern client (raw
 * 2026-07-28 requests)} × {legacy server over stdio and HTTP, 2026-07-28 server over stdio and
 * HTTP, dual-era server (FastMCP 4) over HTTP} on the HTTP front, and on the --stdio front for one
 * server of each era. Each cell starts its upstream and proxy (and a second replica sharing the
 * secret) once. What the 2026-07-28 specification rules out is in IMPOSSIBLE and not run; what the
 * proxy lacks today is in KNOWN_GAPS and runs with `it.fails`, so closing a gap turns it red until
 * its row is removed. What a fixture cannot do (it offers no tool for it) is in NOT_OFFERED.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postAndDrop, sessionFrom } from '../helpers/from-address.js';
import { NEGOTIATION } from '../helpers/modern-clients.js';
import {
  commandLine,
  eventually,
  fixtureArgv,
  jsonLines,
  PROXY_MAIN,
  startHttpFixture,
  startProxy,
  type Running,
} from '../helpers/processes.js';
import { metricValue, modern, rawPost, sseMessages } from '../helpers/raw.js';

type ClientEra = 'legacy' | 'modern';
type ServerEra = 'legacy' | 'modern' | 'dual';
type Transport = 'stdio' | 'http';
type Front = 'http' | 'stdio';

const SCENARIOS = [
  'list tools',
  'call a tool',
  'negotiated call',
  'variant view',
  'tool search',
  'list changes per variant',
  'input round',
  'input round across replicas',
  'progress',
  'cancellation',
  'log messages at a set level',
  'resource subscription updates',
  'tasks',
  'legacy session on another replica',
  'unread large answer held once',
  'deep upstream message refused',
] as const;
type Scenario = (typeof SCENARIOS)[number];

interface ServerKind {
  id: string;
  era: ServerEra;
  transport: Transport;
  fixture: string;
}
const SERVERS: ServerKind[] = [
  { id: 'legacy/stdio', era: 'legacy', transport: 'stdio', fixture: 'matrix-legacy-server' },
  { id: 'legacy/http', era: 'legacy', transport: 'http', fixture: 'matrix-legacy-server' },
  { id: '2026-07-28/stdio', era: 'modern', transport: 'stdio', fixture: 'matrix-modern-server' },
  { id: '2026-07-28/http', era: 'modern', transport: 'http', fixture: 'matrix-modern-server' },
  { id: 'dual/http', era: 'dual', transport: 'http', fixture: 'python/matrix_dual_server.py' },
];

interface Cell {
  client: ClientEra;
  server: ServerKind;
  front: Front;
}
const cellName = (c: Cell) => `${c.client} client → ${c.front} front → ${c.server.id}`;

const CELLS: Cell[] = [
  ...SERVERS.flatMap((server) => (['legacy', 'modern'] as const).map((client) => ({ client, server, front: 'http' as const }))),
  ...['legacy/stdio', '2026-07-28/stdio', 'dual/http'].flatMap((id) =>
    (['legacy', 'modern'] as const).map((client) => ({ client, server: SERVERS.find((s) => s.id === id)!, front: 'stdio' as const })),
  ),
];

/** A cell × scenario pattern: `*` matches any value. */
interface Row {
  client: ClientEra | '*';
  server: string;
  front: Front | '*';
  scenario: Scenario;
  why: string;
}
const matches = (row: Row, cell: Cell, scenario: Scenario) =>
  row.scenario === scenario &&
  (row.client === '*' || row.client === cell.client) &&
  (row.server === '*' || row.server === cell.server.id) &&
  (row.front === '*' || row.front === cell.front);

/** Cells the 2026-07-28 specification rules out: not run. */
const IMPOSSIBLE: Row[] = [
  {
    client: 'legacy',
    server: '*',
    front: '*',
    scenario: 'tasks',
    why: 'dual-era digest: "drop legacy `capabilities.tasks` (tasks are now the `io.modelcontextprotocol/tasks` extension, different API)": the extension is declared per request in `_meta` and answered with resultType "task", which a 2025-11-25 session has neither of (its experimental tasks are another API, out of this matrix)',
  },
  {
    client: 'modern',
    server: '*',
    front: '*',
    scenario: 'legacy session on another replica',
    why: 'versioning (dual-era): "A request carrying modern per-request _meta is served statelessly according to this revision": there is no session to continue',
  },
];

/** What a fixture offers no tool or channel for: not run (not the proxy's doing). */
const NOT_OFFERED: Row[] = [
  {
    client: '*',
    server: 'dual/http',
    front: '*',
    scenario: 'list changes per variant',
    why: 'the FastMCP fixture has no tool that changes its tool list',
  },
  { client: '*', server: 'dual/http', front: '*', scenario: 'input round', why: 'the FastMCP fixture asks no input' },
  { client: '*', server: 'dual/http', front: '*', scenario: 'input round across replicas', why: 'the FastMCP fixture asks no input' },
  {
    client: '*',
    server: 'dual/http',
    front: '*',
    scenario: 'resource subscription updates',
    why: 'the FastMCP fixture has no subscribable resource',
  },
  {
    client: '*',
    server: '2026-07-28/stdio',
    front: '*',
    scenario: 'list changes per variant',
    why: "the v2 SDK's stdio entry has no event bus: it announces no change",
  },
  {
    client: '*',
    server: '2026-07-28/stdio',
    front: '*',
    scenario: 'resource subscription updates',
    why: "the v2 SDK's stdio entry has no event bus: it announces no change",
  },
  // Replicas and held answers are HTTP matters: the --stdio front has one client and no connection to drop.
  ...(['input round across replicas', 'legacy session on another replica', 'unread large answer held once'] as const).map((scenario) => ({
    client: '*' as const,
    server: '*',
    front: 'stdio' as const,
    scenario,
    why: 'an HTTP-front scenario',
  })),
];

/** What the proxy lacks today: run with it.fails; remove the row when the gap is closed. */
const KNOWN_GAPS: Row[] = [];

const KEY = 'io.modelcontextprotocol/server-variant';
const VARIANTS_EXT = 'io.modelcontextprotocol/server-variants';
const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const SECRET = 'matrix-test-secret-0123456789abcdef';
const MiB = 1024 * 1024;
const JSON_TEXT = '{"city":"Bern","n":8}';
const dir = mkdtempSync(join(tmpdir(), 'proxy-matrix-'));

/** The texts of a tool result's content. */
const textOf = (result: any): string => (result?.content ?? []).map((c: { text?: string }) => c.text ?? '').join('');
/** Cancellations the upstream fixture logged (faulty: FAULTY_LOG, the others: MATRIX_LOG; same file). */
const cancelled = (file: string) => jsonLines(file).filter((l) => l.cancelled !== undefined).length;
const started = (file: string) => jsonLines(file).filter((l) => l.started !== undefined || l.tool === 'hang').length;

/** A stdio proxy spoken to in raw 2026-07-28 lines: each request's reply, the notifications in between. */
class StdioLines {
  private proc: ChildProcess;
  private buffered = '';
  readonly messages: any[] = [];
  private waiters: Array<{ match: (m: any) => boolean; resolve: (m: any) => void }> = [];
  constructor(args: string[]) {
    this.proc = spawn(process.execPath, [PROXY_MAIN, '--stdio', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.resume();
    this.proc.stdout!.on('data', (d: Buffer) => {
      this.buffered += d.toString();
      const lines = this.buffered.split('\n');
      this.buffered = lines.pop()!;
      for (const line of lines.filter(Boolean)) {
        const msg = JSON.parse(line);
        this.messages.push(msg);
        for (const w of this.waiters.filter((w) => w.match(msg))) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(msg);
        }
      }
    });
  }
  write(msg: unknown): void {
    this.proc.stdin!.write(`${JSON.stringify(msg)}\n`);
  }
  next(match: (m: any) => boolean, ms = 20_000): Promise<any> {
    const found = this.messages.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no such message on the stdio front within the time')), ms);
      this.waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }
  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) return resolve();
      this.proc.once('exit', () => resolve());
      this.proc.stdin!.end();
      this.proc.kill('SIGTERM');
    });
  }
}

/** One cell's processes: the upstream (HTTP), two proxy replicas (HTTP front), the config they share. */
interface Rig {
  config: string;
  log: string;
  upstream?: Running;
  a?: Running;
  b?: Running;
  stdio?: StdioLines;
  stoppers: Array<() => Promise<unknown>>;
  /** Legacy clients shared by the cell's scenarios, by their options. */
  clients: Map<string, ReturnType<typeof connectLegacy>>;
}

async function startRig(cell: Cell, index: number): Promise<Rig> {
  const log = join(dir, `cell-${index}.log`);
  const fixtureEnv = { FAULTY_LOG: log, MATRIX_LOG: log };
  const rig: Rig = { config: join(dir, `cell-${index}.yaml`), log, stoppers: [], clients: new Map() };
  let upstream: string;
  if (cell.server.transport === 'http') {
    rig.upstream = await startHttpFixture(cell.server.fixture, fixtureEnv);
    rig.stoppers.push(() => rig.upstream!.stop());
    upstream = `  url: ${rig.upstream.url}\n`;
  } else {
    upstream = `  command: ${JSON.stringify(commandLine(fixtureArgv(cell.server.fixture)))}\n  env: ${JSON.stringify(fixtureEnv)}\n`;
  }
  writeFileSync(
    rig.config,
    `upstream:\n${upstream}  maxJsonDepth: 32\n` +
      'serverVariants:\n  variants:\n    - { id: all, description: All }\n    - { id: lean, description: Lean, tools: { include: [echo] } }\n' +
      'modern:\n  tasks: { answerWithinMs: 0, pollIntervalMs: 100 }\n',
  );
  if (cell.front === 'http') {
    [rig.a, rig.b] = await Promise.all(
      ['alpha', 'beta'].map((id) =>
        startProxy(['--config', rig.config], { MCP_PROXY_SECRET: SECRET, MCP_PROXY_REPLICA_ID: `${id}-${index}` }),
      ),
    );
    rig.stoppers.push(
      () => rig.a!.stop(),
      () => rig.b!.stop(),
    );
  } else if (cell.client === 'modern') {
    rig.stdio = new StdioLines(['--config', rig.config, '--log-level', 'warn']);
    rig.stoppers.push(() => rig.stdio!.stop());
  }
  return rig;
}

// ---------------------------------------------------------------------------------------------
// The legacy client: the official v1 SDK client, answering every input a server may ask for.
// ---------------------------------------------------------------------------------------------

interface LegacyOptions {
  features?: string[];
  variants?: boolean;
  /** HTTP front: send each request to the next of these replicas in turn. */
  replicas?: Running[];
}

/**
 * A legacy client of the cell, shared by its scenarios (each new session costs a process start
 * on a stdio upstream or front); one that hops between replicas is its scenario's own.
 */
async function legacyClient(cell: Cell, rig: Rig, o: LegacyOptions = {}) {
  if (o.replicas) return connectLegacy(cell, rig, o);
  const key = JSON.stringify(o);
  if (!rig.clients.has(key)) {
    const connecting = connectLegacy(cell, rig, o);
    rig.clients.set(key, connecting);
    rig.stoppers.unshift(async () => (await connecting.catch(() => undefined))?.close());
  }
  const shared = await rig.clients.get(key)!;
  return { ...shared, close: async () => undefined };
}

async function connectLegacy(cell: Cell, rig: Rig, o: LegacyOptions) {
  const extensions: Record<string, unknown> = {};
  if (o.features) extensions[NEGOTIATION] = { version: '1.0', features: o.features };
  if (o.variants) extensions[VARIANTS_EXT] = { variantHints: { hints: {} } };
  const client = new Client(
    { name: 'matrix-legacy', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true }, extensions } as never },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    const first = req.params.messages[0]?.content as { text?: string };
    return { model: 'test-model', role: 'assistant', content: { type: 'text', text: `sampled: ${first.text ?? ''}` } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///tmp/matrix', name: 'matrix' }] }));
  let transport: StreamableHTTPClientTransport | StdioClientTransport;
  if (cell.front === 'http') {
    const replicas = o.replicas ?? [rig.a!];
    let next = 0;
    const roundRobin: typeof fetch = (input, init) => fetch(new URL('/mcp', replicas[next++ % replicas.length].url), init);
    transport = new StreamableHTTPClientTransport(new URL(rig.a!.url), { fetch: roundRobin });
  } else {
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [PROXY_MAIN, '--stdio', '--config', rig.config, '--log-level', 'warn'],
      env: { ...process.env } as Record<string, string>,
      stderr: 'pipe',
    });
  }
  await client.connect(transport);
  /** Every message the transport hands the client. */
  const messages: any[] = [];
  const wire = client.transport!;
  const onmessage = wire.onmessage!;
  wire.onmessage = (msg, extra) => {
    messages.push(msg);
    onmessage(msg, extra);
  };
  return {
    client,
    messages,
    async close() {
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The modern client: raw 2026-07-28 requests on the HTTP front or the stdio front.
// ---------------------------------------------------------------------------------------------

const INPUT_CAPS = { sampling: {}, elicitation: { form: {} }, roots: {} };
let nextId = 1;

/** A modern request's messages (notifications, then the reply) on either front; `to` picks a replica. */
async function modernSend(
  cell: Cell,
  rig: Rig,
  method: string,
  params: Record<string, unknown>,
  caps: Record<string, unknown> = {},
  o: { to?: Running; signal?: AbortSignal } = {},
): Promise<{ reply: any; notifications: any[] }> {
  const m = modern(nextId++, method, params, caps);
  if (cell.front === 'http') {
    const r = await rawPost((o.to ?? rig.a!).url, m.body, m.headers, o.signal);
    return { reply: r.messages.find((x) => x.id === m.body.id), notifications: r.messages.filter((x) => x.id === undefined) };
  }
  const from = rig.stdio!.messages.length;
  rig.stdio!.write(m.body);
  const reply = await rig.stdio!.next((x) => x.id === m.body.id && x.method === undefined);
  return { reply, notifications: rig.stdio!.messages.slice(from).filter((x) => x.id === undefined) };
}

/** The answer a modern client gives to one input request, as the v1 client's handlers above do. */
function answer(req: { method: string; params?: any }): unknown {
  if (req.method === 'elicitation/create') return { action: 'accept', content: { name: 'Ada' } };
  if (req.method === 'sampling/createMessage')
    return { model: 'test-model', role: 'assistant', content: { type: 'text', text: `sampled: ${req.params.messages[0].content.text}` } };
  return { roots: [{ uri: 'file:///tmp/matrix', name: 'matrix' }] };
}

/** A tools/call through its input rounds; the retries go to `retryTo` (another replica) when given. */
async function modernCallWithInput(cell: Cell, rig: Rig, name: string, args: Record<string, unknown>, retryTo?: Running): Promise<any> {
  let params: Record<string, unknown> = { name, arguments: args };
  for (let round = 0; round < 4; round++) {
    const { reply } = await modernSend(cell, rig, 'tools/call', params, INPUT_CAPS, { to: round === 0 ? rig.a : (retryTo ?? rig.a) });
    if (reply.result?.resultType !== 'input_required') return reply;
    const inputResponses = Object.fromEntries(
      Object.entries(reply.result.inputRequests as Record<string, any>).map(([k, req]) => [k, answer(req)]),
    );
    params = {
      name,
      arguments: args,
      inputResponses,
      ...(reply.result.requestState !== undefined && { requestState: reply.result.requestState }),
    };
  }
  throw new Error('more than 4 input rounds');
}

// ---------------------------------------------------------------------------------------------
// The scenarios: one function per scenario, each for both client eras.
// ---------------------------------------------------------------------------------------------

type Run = (cell: Cell, rig: Rig) => Promise<void>;

const RUNS: Record<Scenario, Run> = {
  async 'list tools'(cell, rig) {
    let names: string[];
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig);
      names = (await c.client.listTools()).tools.map((t) => t.name);
      await c.close();
    } else {
      names = (await modernSend(cell, rig, 'tools/list', {})).reply.result.tools.map((t: { name: string }) => t.name);
    }
    expect(names).toEqual(expect.arrayContaining(['echo', 'slow_progress', 'hang', 'log', 'deep']));
  },

  async 'call a tool'(cell, rig) {
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig);
      const result = await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      expect(textOf(result)).toBe('hi');
      await c.close();
    } else {
      const { reply } = await modernSend(cell, rig, 'tools/call', { name: 'echo', arguments: { text: 'hi' } });
      expect(reply.result).toMatchObject({ resultType: 'complete' });
      expect(textOf(reply.result)).toBe('hi');
    }
  },

  async 'negotiated call'(cell, rig) {
    const features = ['format=json', 'verbosity=compact'];
    let result: any;
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig, { features });
      result = await c.client.callTool({ name: 'echo', arguments: { text: JSON_TEXT } });
      await c.close();
    } else {
      result = (
        await modernSend(
          cell,
          rig,
          'tools/call',
          { name: 'echo', arguments: { text: JSON_TEXT } },
          { extensions: { [NEGOTIATION]: { features } } },
        )
      ).reply.result;
    }
    // FastMCP wraps a str result as {"result": ...}; the proxy keeps the wrapper around the data.
    const data = cell.server.era === 'dual' ? result.structuredContent?.result : result.structuredContent;
    expect(data, JSON.stringify(result)).toEqual({ city: 'Bern', n: 8 });
  },

  async 'variant view'(cell, rig) {
    const names = async (variant: string): Promise<string[]> => {
      if (cell.client === 'legacy') {
        const c = await legacyClient(cell, rig, { variants: true });
        const tools = (await c.client.listTools({ _meta: { [KEY]: variant } })).tools.map((t) => t.name);
        await c.close();
        return tools;
      }
      const { reply } = await modernSend(cell, rig, 'tools/list', { _meta: { [KEY]: variant } }, { extensions: { [VARIANTS_EXT]: {} } });
      return reply.result.tools.map((t: { name: string }) => t.name);
    };
    expect(await names('lean')).toEqual(['echo']);
    expect(await names('all')).toEqual(expect.arrayContaining(['echo', 'slow_progress']));
  },

  async 'tool search'(cell, rig) {
    const features = ['tools=search'];
    const search = { name: 'search_tools', arguments: { query: 'echo the text' } };
    const call = { name: 'call_tool', arguments: { name: 'echo', arguments: { text: 'hi' } } };
    // A call that asks the client for input, through call_tool: its input round is the named tool's (the FastMCP fixture asks none).
    const asks = cell.server.era !== 'dual';
    const elicit = { name: 'call_tool', arguments: { name: 'elicit', arguments: { message: 'who?' } } };
    let listed: string[], found: string[], called: any, asked: any;
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig, { features });
      listed = (await c.client.listTools()).tools.map((t) => t.name);
      found = ((await c.client.callTool(search)).structuredContent as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
      called = await c.client.callTool(call);
      if (asks) asked = await c.client.callTool(elicit);
      await c.close();
    } else {
      const caps = { ...INPUT_CAPS, extensions: { [NEGOTIATION]: { features } } };
      listed = (await modernSend(cell, rig, 'tools/list', {}, caps)).reply.result.tools.map((t: { name: string }) => t.name);
      found = (await modernSend(cell, rig, 'tools/call', search, caps)).reply.result.structuredContent.tools.map(
        (t: { name: string }) => t.name,
      );
      called = (await modernSend(cell, rig, 'tools/call', call, caps)).reply.result;
      let params: Record<string, unknown> = elicit;
      for (let round = 0; asks && round < 4 && asked?.resultType !== 'complete'; round++) {
        asked = (await modernSend(cell, rig, 'tools/call', params, caps)).reply.result;
        if (asked?.resultType !== 'input_required') break;
        const inputResponses = Object.fromEntries(
          Object.entries(asked.inputRequests as Record<string, any>).map(([k, r]) => [k, answer(r)]),
        );
        params = { ...elicit, inputResponses, ...(asked.requestState !== undefined && { requestState: asked.requestState }) };
      }
    }
    expect(listed).toEqual(['search_tools', 'call_tool']);
    expect(found[0]).toBe('echo');
    expect(textOf(called)).toBe('hi');
    if (asks)
      expect(JSON.parse(textOf(asked)), JSON.stringify(asked).slice(0, 400)).toMatchObject({ action: 'accept', content: { name: 'Ada' } });
  },

  async 'list changes per variant'(cell, rig) {
    const tool = `added_${nextId++}`;
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig, { variants: true });
      const seen: unknown[] = [];
      c.client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => void seen.push(n.params?._meta?.[KEY] ?? null));
      await c.client.callTool({ name: 'add_tool', arguments: { name: tool } });
      await eventually(() => seen.length >= 2, 10_000, 'list_changed for each variant');
      expect(seen).toEqual(['all', 'lean']);
      await c.close();
      return;
    }
    const caps = { extensions: { [VARIANTS_EXT]: {} } };
    const listen = modern(nextId++, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, caps);
    const changes = await listenDuring(
      cell,
      rig,
      listen,
      async () => {
        await modernSend(cell, rig, 'tools/call', { name: 'add_tool', arguments: { name: tool } });
      },
      (m) => m.method === 'notifications/tools/list_changed' && m.params?._meta?.[KEY] === 'lean',
    );
    expect(changes.filter((m) => m.method === 'notifications/tools/list_changed').map((m) => m.params?._meta?.[KEY])).toEqual([
      'all',
      'lean',
    ]);
  },

  async 'input round'(cell, rig) {
    await inputRound(cell, rig, false);
  },

  async 'input round across replicas'(cell, rig) {
    await inputRound(cell, rig, true);
  },

  async progress(cell, rig) {
    const args = { steps: 3, delayMs: 30 };
    let notes: any[];
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig);
      const from = c.messages.length;
      const result = await c.client.callTool({ name: 'slow_progress', arguments: args }, undefined, { onprogress: () => undefined });
      expect(textOf(result)).toBe('done 3');
      notes = c.messages.slice(from);
      await c.close();
    } else {
      const { reply, notifications } = await modernSend(cell, rig, 'tools/call', {
        name: 'slow_progress',
        arguments: args,
        _meta: { progressToken: 'matrix-p' },
      });
      expect(textOf(reply.result)).toBe('done 3');
      notes = notifications;
      expect(notes.filter((m) => m.method === 'notifications/progress').every((m) => m.params.progressToken === 'matrix-p')).toBe(true);
    }
    expect(notes.filter((m) => m.method === 'notifications/progress').map((m) => `${m.params.progress}/${m.params.total}`)).toEqual([
      '1/3',
      '2/3',
      '3/3',
    ]);
  },

  async cancellation(cell, rig) {
    const before = { started: started(rig.log), cancelled: cancelled(rig.log) };
    const abort = new AbortController();
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig);
      const call = c.client.callTool({ name: 'hang', arguments: {} }, undefined, { signal: abort.signal, timeout: 60_000 });
      await eventually(() => started(rig.log) > before.started, 15_000, 'hang started upstream');
      abort.abort();
      await expect(call).rejects.toThrow();
      await eventually(() => cancelled(rig.log) > before.cancelled, 15_000, 'the upstream heard the cancellation');
      await c.close();
      return;
    }
    if (cell.front === 'http') {
      const call = modernSend(cell, rig, 'tools/call', { name: 'hang', arguments: {} }, {}, { signal: abort.signal }).catch(
        (err: Error) => err,
      );
      await eventually(() => started(rig.log) > before.started, 15_000, 'hang started upstream');
      abort.abort();
      expect(await call).toBeInstanceOf(Error);
    } else {
      const m = modern(nextId++, 'tools/call', { name: 'hang', arguments: {} });
      rig.stdio!.write(m.body);
      await eventually(() => started(rig.log) > before.started, 15_000, 'hang started upstream');
      rig.stdio!.write({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: m.body.id, reason: 'matrix', _meta: modern(0, 'x').body.params._meta },
      });
    }
    await eventually(() => cancelled(rig.log) > before.cancelled, 15_000, 'the upstream heard the cancellation');
  },

  async 'log messages at a set level'(cell, rig) {
    let notes: any[];
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig);
      const from = c.messages.length;
      await c.client.setLoggingLevel('warning');
      await c.client.callTool({ name: 'log', arguments: { level: 'info', message: 'quiet' } });
      await c.client.callTool({ name: 'log', arguments: { level: 'error', message: 'loud' } });
      notes = c.messages.slice(from);
      await c.close();
    } else {
      const meta = { 'io.modelcontextprotocol/logLevel': 'warning' };
      notes = [
        ...(await modernSend(cell, rig, 'tools/call', { name: 'log', arguments: { level: 'info', message: 'quiet' }, _meta: meta }))
          .notifications,
        ...(await modernSend(cell, rig, 'tools/call', { name: 'log', arguments: { level: 'error', message: 'loud' }, _meta: meta }))
          .notifications,
      ];
    }
    const logs = notes
      .filter((m) => m.method === 'notifications/message')
      .map((m) => `${m.params.level} ${typeof m.params.data === 'string' ? m.params.data : m.params.data?.msg}`);
    expect(logs).toEqual(['error loud']);
  },

  async 'resource subscription updates'(cell, rig) {
    const uri = 'faulty://counter';
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig);
      const updated = new Promise((resolve) =>
        c.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)),
      );
      await c.client.subscribeResource({ uri });
      // A bridged subscription is opened upstream in the background: bump until the update comes.
      let heard: unknown;
      void updated.then((u) => (heard = u));
      await eventually(
        async () => {
          if (heard === undefined) await c.client.callTool({ name: 'bump', arguments: {} });
          return heard === uri;
        },
        15_000,
        'resources/updated',
      );
      await c.close();
      return;
    }
    const listen = modern(nextId++, 'subscriptions/listen', { notifications: { resourceSubscriptions: [uri] } });
    const seen = await listenDuring(
      cell,
      rig,
      listen,
      async () => {
        await modernSend(cell, rig, 'tools/call', { name: 'bump', arguments: {} });
      },
      (m) => m.method === 'notifications/resources/updated',
    );
    expect(seen.find((m) => m.method === 'notifications/resources/updated').params.uri).toBe(uri);
  },

  async tasks(cell, rig) {
    const caps = { extensions: { [TASKS_EXT]: {} } };
    const { reply } = await modernSend(cell, rig, 'tools/call', { name: 'slow_progress', arguments: { steps: 1, delayMs: 50 } }, caps);
    expect(reply.result, JSON.stringify(reply)).toMatchObject({ resultType: 'task', status: 'working' });
    let last: any;
    await eventually(
      async () => {
        last = (await modernSend(cell, rig, 'tasks/get', { taskId: reply.result.taskId }, caps)).reply.result;
        return last?.status !== 'working';
      },
      15_000,
      'the task finishes',
    );
    expect(last.status).toBe('completed');
    expect(textOf(last.result)).toBe('done 1');
  },

  async 'legacy session on another replica'(cell, rig) {
    const c = await legacyClient(cell, rig, { replicas: [rig.a!, rig.b!] });
    for (let i = 0; i < 4; i++) expect(textOf(await c.client.callTool({ name: 'echo', arguments: { text: `hop ${i}` } }))).toBe(`hop ${i}`);
    await c.close();
  },

  async 'unread large answer held once'(cell, rig) {
    const bytes = 2 * MiB;
    // FastMCP sends a str result twice: as text and as structuredContent {"result": …}.
    const answerBytes = cell.server.era === 'dual' ? 2 * bytes : bytes;
    const proxy = rig.b!;
    if (cell.client === 'legacy') {
      const session = await sessionFrom('127.0.0.1', proxy.url);
      const call = {
        jsonrpc: '2.0',
        id: 77,
        method: 'tools/call',
        params: { name: 'slow_progress', arguments: { steps: 1, delayMs: 300, resultBytes: bytes }, _meta: { progressToken: 'unread' } },
      };
      const { lastEventId } = await postAndDrop('127.0.0.1', proxy.url, call, session);
      await eventually(
        async () => (await metricValue(proxy.url, 'mcp_proxy_held_bytes{kind="stream"}')) >= answerBytes,
        15_000,
        'the answer held for its client',
      );
      const held = await metricValue(proxy.url, 'mcp_proxy_held_bytes{kind="stream"}');
      expect(held).toBeLessThan(1.5 * answerBytes);
      const resumed = await fetch(proxy.url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': lastEventId } });
      expect(resumed.status).toBe(200);
      expect(await resumed.text()).toContain(`done 1${'x'.repeat(1000)}`);
      return;
    }
    const caps = { extensions: { [TASKS_EXT]: {} } };
    const { reply } = await modernSend(
      cell,
      rig,
      'tools/call',
      { name: 'slow_progress', arguments: { steps: 1, delayMs: 50, resultBytes: bytes } },
      caps,
      { to: proxy },
    );
    expect(reply.result, JSON.stringify(reply).slice(0, 500)).toMatchObject({ resultType: 'task' });
    await eventually(
      async () => (await metricValue(proxy.url, 'mcp_proxy_held_bytes{kind="task_result"}')) >= answerBytes,
      15_000,
      'the result held for its client',
    );
    expect(await metricValue(proxy.url, 'mcp_proxy_held_bytes{kind="task_result"}')).toBeLessThan(1.5 * answerBytes);
    const got = (await modernSend(cell, rig, 'tasks/get', { taskId: reply.result.taskId }, caps, { to: proxy })).reply.result;
    expect(textOf(got.result).length).toBe(bytes + 'done 1'.length);
  },

  async 'deep upstream message refused'(cell, rig) {
    if (cell.client === 'legacy') {
      const c = await legacyClient(cell, rig);
      await expect(c.client.callTool({ name: 'deep', arguments: {} }, undefined, { timeout: 15_000 })).rejects.toThrow(
        /upstream\.maxJsonDepth/,
      );
      expect(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'after' } }))).toBe('after');
      await c.close();
    } else {
      const { reply } = await modernSend(cell, rig, 'tools/call', { name: 'deep', arguments: {} });
      expect(reply.error, JSON.stringify(reply).slice(0, 300)).toMatchObject({
        code: -32603,
        message: expect.stringContaining('upstream.maxJsonDepth'),
      });
      expect(textOf((await modernSend(cell, rig, 'tools/call', { name: 'echo', arguments: { text: 'after' } })).reply.result)).toBe(
        'after',
      );
    }
  },
};

/** An input round of each kind (elicitation, sampling, roots), answered at the same or, `across`, at the other replica. */
async function inputRound(cell: Cell, rig: Rig, across: boolean): Promise<void> {
  const results: string[] = [];
  if (cell.client === 'legacy') {
    const c = await legacyClient(cell, rig, across ? { replicas: [rig.a!, rig.b!] } : {});
    for (const [name, args] of [
      ['elicit', { message: 'who?' }],
      ['sample', { prompt: 'hello' }],
      ['roots', {}],
    ] as const)
      results.push(textOf(await c.client.callTool({ name, arguments: args })));
    await c.close();
  } else {
    for (const [name, args] of [
      ['elicit', { message: 'who?' }],
      ['sample', { prompt: 'hello' }],
      ['roots', {}],
    ] as const) {
      const reply = await modernCallWithInput(cell, rig, name, args, across ? rig.b : undefined);
      expect(reply.result, JSON.stringify(reply).slice(0, 400)).toMatchObject({ resultType: 'complete' });
      results.push(textOf(reply.result));
    }
  }
  expect(JSON.parse(results[0])).toMatchObject({ action: 'accept', content: { name: 'Ada' } });
  expect(results[1]).toBe('sampled: hello');
  expect(JSON.parse(results[2])).toMatchObject({ roots: [{ uri: 'file:///tmp/matrix', name: 'matrix' }] });
}

/** Opens a modern listen stream, runs `during` once it is acknowledged, and resolves with its messages once `until` matches one. */
async function listenDuring(
  cell: Cell,
  rig: Rig,
  listen: ReturnType<typeof modern>,
  during: () => Promise<void>,
  until: (m: any) => boolean,
): Promise<any[]> {
  const id = listen.body.id;
  if (cell.front === 'http') {
    const abort = new AbortController();
    const res = await fetch(rig.a!.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...listen.headers },
      body: JSON.stringify(listen.body),
      signal: abort.signal,
    });
    const stream = sseMessages(res);
    try {
      await stream.next((m) => m.method === 'notifications/subscriptions/acknowledged' || m.id === id);
      await during();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise(
        (_, reject) => (timer = setTimeout(() => reject(new Error('the awaited notification did not come within 10 s')), 10_000)),
      );
      await Promise.race([stream.next(until), late]).finally(() => clearTimeout(timer));
      return stream.messages;
    } finally {
      abort.abort();
    }
  }
  const from = rig.stdio!.messages.length;
  rig.stdio!.write(listen.body);
  try {
    await rig.stdio!.next((m) => m.method === 'notifications/subscriptions/acknowledged' || m.id === id);
    await during();
    await rig.stdio!.next((m) => until(m) && rig.stdio!.messages.indexOf(m) >= from, 10_000);
    return rig
      .stdio!.messages.slice(from)
      .filter((m) => m.params?._meta?.['io.modelcontextprotocol/subscriptionId'] === id || m.id === undefined);
  } finally {
    rig.stdio!.write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, _meta: listen.body.params._meta } });
  }
}

// ---------------------------------------------------------------------------------------------
// The matrix.
// ---------------------------------------------------------------------------------------------

describe.each(CELLS.map((cell, index) => ({ cell, index, name: cellName(cell) })))('$name', ({ cell, index }) => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig(cell, index);
  }, 60_000);
  afterAll(async () => {
    for (const stop of (rig?.stoppers ?? []).reverse()) await stop();
  });

  for (const scenario of SCENARIOS) {
    const impossible = IMPOSSIBLE.find((r) => matches(r, cell, scenario));
    const notOffered = NOT_OFFERED.find((r) => matches(r, cell, scenario));
    const gap = KNOWN_GAPS.find((r) => matches(r, cell, scenario));
    if (impossible || notOffered) continue;
    if (cell.client === 'modern' && scenario === 'legacy session on another replica') continue;
    const test = gap ? it.fails : it;
    test(gap ? `${scenario} (known gap: ${gap.why})` : scenario, () => RUNS[scenario](cell, rig!), 45_000);
  }
});
