/**
 * One session at an endpoint of several servers: to the relay (or the pool) an ordinary legacy
 * upstream session, which opens a session on each server the first time the client uses it,
 * with the client's own initialize. `initialize` is answered with the servers' capabilities
 * merged; a tool or prompt goes to the server its name's prefix names, a resource to the server
 * that listed it; lists are merged, their cursors holding each server's own. A server's requests
 * to the client (elicitation, sampling, roots) get ids of the session's own and their answers go
 * back to it; its notifications pass as they are. A server that ends or fails fails only the
 * requests it had, under its name, and is opened again on next use.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../../jsonrpc/errors.js';
import {
  INTERNAL_ERROR,
  INVALID_PARAMS,
  isNotification,
  isObject,
  isResponse,
  METHOD_NOT_FOUND,
  type Frame,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../../jsonrpc/message.js';
import { withId } from '../../jsonrpc/envelope.js';
import { cancelledOf } from '../../mcp/cancel-progress.js';
import type { McpResult } from '../../transformers/contract.js';
import type { UpstreamConnection, UpstreamEvents } from '../types.js';
import { decodeCursor, encodeCursor, type ServerNames } from './names.js';
import { mergedInitialize, type ListKind, LISTS, type Merged } from './merge.js';
import type { AggregateServer } from './server.js';

/** The proxy's own requests on a server's session: ids no client request has while the session is being opened. */
const INITIALIZE_ID = 'mcp-negotiate-proxy/initialize';
const LEVEL_ID = 'mcp-negotiate-proxy/logging';
/** Servers' requests a client may leave unanswered at once, in one session. */
export const MAX_ASKS = 100;

/** What waits for a server's answer to a request sent on. */
interface Waiter {
  answered(frame: Frame): void;
  failed(err: ProxyError): void;
}

/** One server's session, opened for this client session. */
class Link {
  /** Requests sent on, by the client's id (each server session has its own ids). */
  readonly waiting = new Map<JsonRpcId, Waiter>();
  /** The server's requests to the client under way: its id → the session's. */
  readonly asks = new Map<JsonRpcId, number>();
  connection!: UpstreamConnection;
  ready!: Promise<McpResult>;
  /** Set once initialized: requests then go at once. */
  initialized = false;
  closed = false;

  constructor(readonly server: AggregateServer) {}

  fail(err: ProxyError): void {
    for (const waiter of this.waiting.values()) waiter.failed(err);
    this.waiting.clear();
  }
}

export interface AggregateSessionOptions {
  names: ServerNames<AggregateServer>;
  initializeTimeoutMs: number;
  /** Open every server's session at initialize (a pooled session), not on first use (a client's). */
  eager: boolean;
  log: Logger;
}

export class AggregateSession implements UpstreamConnection {
  private readonly links = new Map<AggregateServer, Link>();
  /** The server requests the client has yet to answer: the session's id → whose it is. */
  private readonly asked = new Map<number, { link: Link; id: JsonRpcId }>();
  private nextAsk = 1;
  private readonly initialized: Promise<Record<string, unknown>>;
  private onInitialize!: (params: Record<string, unknown>) => void;
  private logLevel: string | undefined;
  private ended = false;

  constructor(
    private readonly events: UpstreamEvents,
    private readonly o: AggregateSessionOptions,
  ) {
    this.initialized = new Promise((resolve) => (this.onInitialize = resolve));
    if (o.eager) for (const server of o.names.servers) this.link(server);
  }

  send(frame: Frame): void {
    if (this.ended) return;
    const msg = frame.msg;
    if (isResponse(msg)) return this.answerAsk(frame, msg);
    if (isNotification(msg)) {
      const cancelled = cancelledOf(msg);
      if (cancelled?.requestId !== undefined) {
        for (const link of this.links.values()) if (link.waiting.has(cancelled.requestId)) link.connection.send(frame);
      } else if (msg.method === 'notifications/roots/list_changed') {
        for (const link of this.links.values())
          void link.ready.then(
            () => link.connection.send(frame),
            () => undefined,
          );
      }
      return; // notifications/initialized: each server's session gets its own
    }
    const req = msg as JsonRpcRequest;
    const list = LISTS[req.method];
    if (list) return void this.list(req, list);
    switch (req.method) {
      case 'initialize':
        return void this.initialize(req);
      case 'ping':
        return this.reply(req.id, {});
      case 'logging/setLevel':
        return this.setLevel(frame, req);
      case 'tools/call':
      case 'prompts/get':
        return this.byName(frame, req, req.params?.name, (name) => ({ ...req.params, name }));
      case 'completion/complete':
        return this.complete(frame, req);
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return void this.byUri(frame, req, req.params?.uri);
      default:
        return this.error(req.id, { code: METHOD_NOT_FOUND, message: `Method not found: ${req.method}` });
    }
  }

  close(): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.ended = true;
    const links = [...this.links.values()];
    this.links.clear();
    // Like a process that exits once told to, the session is gone once every server session is.
    return Promise.all(links.map((link) => ((link.closed = true), link.connection.close()))).then(() =>
      this.events.onClose(new ProxyError('UPSTREAM_CLOSED', 'The session ended')),
    );
  }

  session(): { id?: string; protocolVersion?: string } {
    return {};
  }

  private async initialize(req: JsonRpcRequest): Promise<void> {
    const params = req.params ?? {};
    this.onInitialize(params);
    // A server no session has opened yet is opened now: its capabilities are part of the answer. A pooled
    // session opens every server now: it serves many requests, and the first should not wait for a start.
    const seen = await Promise.all(
      this.o.names.servers.map((server) =>
        server.known && !this.o.eager ? Promise.resolve(server.known) : this.link(server).ready.catch(() => server.known),
      ),
    );
    this.reply(req.id, mergedInitialize(this.o.names, seen, params.protocolVersion));
  }

  /** The server's session for this client, opened on first use; initialized once the client's initialize is known. */
  private link(server: AggregateServer): Link {
    const open = this.links.get(server);
    if (open) return open;
    const link = new Link(server);
    this.links.set(server, link);
    link.ready = this.open(link);
    link.ready.catch(() => undefined); // its users hear of it
    return link;
  }

  private open(link: Link): Promise<McpResult> {
    const { server } = link;
    const log = this.o.log.child({ server: server.name });
    return new Promise<McpResult>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const gone = (err: ProxyError) => {
        clearTimeout(timer);
        if (this.links.get(server) === link) this.links.delete(server);
        link.closed = true;
        link.fail(err);
        reject(err);
      };
      const answered = (msg: JsonRpcResponse) => {
        clearTimeout(timer);
        if (msg.error) {
          gone(server.failure('UPSTREAM_PROTOCOL', `refused initialize: ${msg.error.message}`));
          return void link.connection.close();
        }
        const result = isObject(msg.result) ? msg.result : {};
        server.learned(result);
        link.initialized = true;
        link.connection.send({ msg: { jsonrpc: '2.0', method: 'notifications/initialized' } });
        if (this.logLevel) this.sendLevel(link, this.logLevel);
        resolve(result);
      };
      const events: UpstreamEvents = {
        onMessage: (frame, relatedId) => {
          const msg = frame.msg;
          if (isResponse(msg) && msg.id === INITIALIZE_ID) return answered(msg);
          this.fromServer(link, frame, relatedId);
        },
        onFailure: (id, err) => {
          if (id === INITIALIZE_ID) return gone(server.failure(err.code, `failed: ${err.message}`));
          const waiter = link.waiting.get(id);
          link.waiting.delete(id);
          waiter?.failed(server.failure(err.code, `failed: ${err.message}`));
        },
        onClose: (err) => {
          if (!this.ended && !link.closed) log.warn({ err: err.message }, 'a server session ended');
          gone(server.failure(err.code, `ended: ${err.message}`));
        },
        onWaiting: (id, waiting) => this.events.onWaiting?.(id, waiting),
      };
      try {
        link.connection = server.open(events, log);
      } catch (err) {
        const failure = err instanceof ProxyError ? err : new ProxyError('UPSTREAM_START_FAILED', String(err));
        link.connection = { send: () => undefined, close: () => Promise.resolve() };
        return gone(server.failure(failure.code, `could not be started: ${failure.message}`));
      }
      // A pooled session's servers start before its initialize arrives, as a spare process would.
      void this.initialized.then((params) => {
        if (link.closed) return;
        timer = setTimeout(() => {
          gone(server.failure('REQUEST_TIMEOUT', `did not answer initialize within ${this.o.initializeTimeoutMs} ms`));
          void link.connection.close();
        }, this.o.initializeTimeoutMs);
        link.connection.send({ msg: { jsonrpc: '2.0', id: INITIALIZE_ID, method: 'initialize', params } });
      });
    });
  }

  /** What a server sends that is not the answer to a request the session is opening it with. */
  private fromServer(link: Link, frame: Frame, relatedId: JsonRpcId | undefined): void {
    if (this.ended) return;
    const msg = frame.msg;
    if (isResponse(msg)) {
      if (msg.id === null) return this.o.log.warn({ server: link.server.name }, 'a server answered with id null: dropped');
      const waiter = link.waiting.get(msg.id);
      link.waiting.delete(msg.id);
      return waiter?.answered(frame);
    }
    if (isNotification(msg)) {
      const cancelled = cancelledOf(msg);
      // The server gave up one of its requests to the client: under the id the client knows it by.
      if (cancelled?.requestId !== undefined) {
        const id = link.asks.get(cancelled.requestId);
        link.asks.delete(cancelled.requestId);
        if (id === undefined) return;
        this.asked.delete(id);
        return this.events.onMessage({ msg: { ...msg, params: { ...msg.params, requestId: id } } }, relatedId);
      }
      return this.events.onMessage(frame, relatedId);
    }
    const req = msg as JsonRpcRequest;
    // A server that keeps asking a client that does not answer is refused, not remembered without end.
    if (this.asked.size >= MAX_ASKS) {
      const error = { code: INTERNAL_ERROR, message: `${MAX_ASKS} requests to the client are unanswered already` };
      return link.connection.send({ msg: { jsonrpc: '2.0', id: req.id, error } });
    }
    const id = this.nextAsk++;
    this.asked.set(id, { link, id: req.id });
    link.asks.set(req.id, id);
    this.events.onMessage({ msg: { ...req, id } }, relatedId);
  }

  /** The client's answer to a server's request, back to that server under its own id. */
  private answerAsk(frame: Frame, msg: JsonRpcResponse): void {
    const asked = typeof msg.id === 'number' ? this.asked.get(msg.id) : undefined;
    if (!asked) return this.o.log.debug({ id: msg.id }, 'dropped a client response nobody waits for');
    this.asked.delete(msg.id as number);
    asked.link.asks.delete(asked.id);
    if (!asked.link.closed) asked.link.connection.send(withId(frame, asked.id));
  }

  /** Sends `frame` to the server and waits for its answer (the client's request id, on that server's session). */
  private forward(server: AggregateServer, id: JsonRpcId, frame: Frame): Promise<Frame> {
    return new Promise((answered, failed) => this.sendTo(server, id, frame, { answered, failed }));
  }

  /** Sends `frame` on to the server and its answer back to the client, as the server wrote it. */
  private pass(server: AggregateServer, id: JsonRpcId, frame: Frame): void {
    this.sendTo(server, id, frame, {
      answered: (answer) => !this.ended && this.events.onMessage(answer, id),
      failed: (err) => this.failed(id, server, err),
    });
  }

  /** Sends `frame` on the server's session once it is initialized (at once when it is), and counts how it ends. */
  private sendTo(server: AggregateServer, id: JsonRpcId, frame: Frame, waiter: Waiter): void {
    const method = (frame.msg as JsonRpcRequest).method;
    const link = this.link(server);
    const counted: Waiter = {
      answered: (answer) => {
        server.counted(method, (answer.msg as JsonRpcResponse).error ? 'error' : 'ok');
        waiter.answered(answer);
      },
      failed: (err) => {
        server.counted(method, 'failed');
        waiter.failed(err);
      },
    };
    const go = () => {
      if (link.closed) return counted.failed(server.failure('UPSTREAM_CLOSED', 'ended'));
      link.waiting.set(id, counted);
      link.connection.send(frame);
    };
    if (link.initialized) return go();
    link.ready.then(go, (err: ProxyError) => counted.failed(err));
  }

  private byName(frame: Frame, req: JsonRpcRequest, name: unknown, params: (name: string) => Record<string, unknown>): void {
    const kind = req.method === 'tools/call' ? 'tool' : 'prompt';
    if (typeof name !== 'string')
      return this.error(req.id, { code: INVALID_PARAMS, message: `Invalid params: ${req.method} needs params.name` });
    const found = this.o.names.inner(name);
    if (!found) return this.error(req.id, { code: INVALID_PARAMS, message: `Unknown ${kind}: ${name} (no server has its prefix)` });
    // A name the server calls it by already: the client's request as it sent it.
    this.pass(found.server, req.id, found.name === name ? frame : { msg: { ...req, params: params(found.name) } });
  }

  private complete(frame: Frame, req: JsonRpcRequest): void {
    const ref = req.params?.ref;
    if (isObject(ref) && ref.type === 'ref/prompt')
      return this.byName(frame, req, ref.name, (name) => ({ ...req.params, ref: { ...ref, name } }));
    if (isObject(ref) && ref.type === 'ref/resource') return void this.byUri(frame, req, ref.uri);
    this.error(req.id, { code: INVALID_PARAMS, message: 'Invalid params: completion/complete needs a ref/prompt or ref/resource' });
  }

  /**
   * A request about a resource, to the server that listed it; a URI no listing named is asked of
   * each server with resources in turn: the first that does not refuse a read answers it, and a
   * subscription (or its end) goes to all of them.
   */
  private async byUri(frame: Frame, req: JsonRpcRequest, uri: unknown): Promise<void> {
    if (typeof uri !== 'string') return this.error(req.id, { code: INVALID_PARAMS, message: `Invalid params: ${req.method} needs a uri` });
    const owner = this.o.names.ownerOf(uri);
    if (owner) return this.pass(owner, req.id, frame);
    // A subscription goes to every server that may have the resource (one that has not never tells of it).
    const everyOne = req.method !== 'resources/read' && req.method !== 'completion/complete';
    let accepted: Frame | undefined;
    let refusal: Frame | undefined;
    for (const server of await this.withCapability('resources')) {
      try {
        const answer = await this.forward(server, req.id, frame);
        if ((answer.msg as JsonRpcResponse).error) refusal ??= answer;
        else if (everyOne) accepted ??= answer;
        else return void (this.ended || this.events.onMessage(answer, req.id));
      } catch (err) {
        this.o.log.debug({ server: server.name, err: (err as Error).message }, 'a server could not be asked for a resource');
      }
    }
    const answer = accepted ?? refusal;
    if (answer) return void (this.ended || this.events.onMessage(answer, req.id));
    this.error(req.id, { code: -32002, message: `Resource not found: ${uri} (no server has it)` });
  }

  /** The servers whose initialize offered `capability` (each is opened to know). */
  private async withCapability(capability: string): Promise<AggregateServer[]> {
    const offers = await Promise.all(
      this.o.names.servers.map((server) =>
        this.link(server).ready.then(
          (result) => isObject(result.capabilities) && isObject(result.capabilities[capability]),
          (err: Error) => {
            this.o.log.warn({ server: server.name, err: err.message }, 'a server is left out: its session could not be opened');
            return false;
          },
        ),
      ),
    );
    return this.o.names.servers.filter((_, i) => offers[i]);
  }

  /** A list merged from every server that offers it (or those a cursor names), each page with each server's next position. */
  private async list(req: JsonRpcRequest, kind: ListKind): Promise<void> {
    const { names, log } = this.o;
    const cursor = req.params?.cursor;
    let positions: Record<string, string> | undefined;
    if (cursor !== undefined) {
      positions = typeof cursor === 'string' ? decodeCursor(cursor, new Set(names.servers.map((s) => s.name))) : undefined;
      if (!positions)
        return this.error(req.id, { code: INVALID_PARAMS, message: 'Invalid params: the cursor is not one this endpoint gave' });
    }
    const servers = positions ? names.servers.filter((s) => positions[s.name] !== undefined) : await this.withCapability(kind.capability);
    const pages = await Promise.all(
      servers.map(async (server) => {
        const params: Record<string, unknown> = { ...req.params };
        delete params.cursor;
        if (positions) params.cursor = positions[server.name];
        try {
          const answer = (await this.forward(server, req.id, { msg: { ...req, params } })).msg as JsonRpcResponse;
          if (answer.error) throw server.failure('UPSTREAM_PROTOCOL', `refused ${req.method}: ${answer.error.message}`);
          return { server, result: isObject(answer.result) ? answer.result : {} };
        } catch (err) {
          log.warn({ server: server.name, err: (err as Error).message }, `a server is left out of ${req.method}`);
          return { server, err };
        }
      }),
    );
    if (this.ended) return;
    const listed = pages.filter((p) => 'result' in p);
    if (listed.length === 0 && pages.length > 0) return this.failed(req.id, pages[0].server, (pages[0] as { err: unknown }).err);
    const merged: Merged = { items: [], names: new Set() };
    const next: Record<string, string> = {};
    for (const { server, result } of listed as { server: AggregateServer; result: McpResult }[]) {
      const list = result[kind.key];
      if (Array.isArray(list)) for (const item of list) if (isObject(item)) kind.add(merged, item, server, names, log);
      if (typeof result.nextCursor === 'string' && result.nextCursor !== '') next[server.name] = result.nextCursor;
    }
    this.reply(req.id, { [kind.key]: merged.items, ...(Object.keys(next).length > 0 ? { nextCursor: encodeCursor(next) } : {}) });
  }

  /** The client's level goes to every server session open now, and to each opened later. */
  private setLevel(frame: Frame, req: JsonRpcRequest): void {
    const level = req.params?.level;
    if (typeof level !== 'string')
      return this.error(req.id, { code: INVALID_PARAMS, message: 'Invalid params: logging/setLevel needs a level' });
    this.logLevel = level;
    for (const link of this.links.values())
      void link.ready.then(
        () => this.sendLevel(link, level),
        () => undefined,
      );
    this.reply(req.id, {});
  }

  private sendLevel(link: Link, level: string): void {
    if (!link.closed) link.connection.send({ msg: { jsonrpc: '2.0', id: LEVEL_ID, method: 'logging/setLevel', params: { level } } });
  }

  private failed(id: JsonRpcId, server: AggregateServer, err: unknown): void {
    if (this.ended) return;
    const failure = err instanceof ProxyError ? err : server.failure('UPSTREAM_PROTOCOL', String(err));
    this.events.onFailure(id, failure);
  }

  private reply(id: JsonRpcId, result: McpResult): void {
    if (!this.ended) this.events.onMessage({ msg: { jsonrpc: '2.0', id, result } }, id);
  }

  private error(id: JsonRpcId, error: JsonRpcErrorObject): void {
    if (!this.ended) this.events.onMessage({ msg: { jsonrpc: '2.0', id, error } }, id);
  }
}
