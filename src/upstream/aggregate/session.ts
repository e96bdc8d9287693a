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
import { randomUUID } from 'node:crypto';
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
import { cancelledNotification, cancelledOf, PROGRESS, progressTokenOf, requestProgressToken } from '../../mcp/cancel-progress.js';
import { clip } from '../../ops/log-text.js';
import { maskSecrets } from '../../ops/mask.js';
import type { McpResult } from '../../transformers/contract.js';
import type { UpstreamConnection, UpstreamEvents } from '../types.js';
import { decodeCursor, encodeCursor, type ServerNames } from './names.js';
import { mergedInitialize, type ListKind, LISTS, type Merged } from './merge.js';
import type { AggregateServer } from './server.js';

/** The longest cursor of one server's kept in a merged cursor. */
const MAX_SERVER_CURSOR = 4096;
/** Servers' requests a client may leave unanswered at once, in one session (one server may hold half of them). */
export const MAX_ASKS = 100;
/**
 * How long a session waits for a server for what it merges (its initialize, a list page) before it goes on
 * without it, at most (half of timeouts.initializeMs when shorter): one server that does not answer must not hold up the others.
 */
export const MERGE_WAIT_MS = 10_000;

/** What waits for a server's answer to a request sent on. */
interface Waiter {
  answered(frame: Frame): void;
  failed(err: ProxyError): void;
  /** The client cancelled the request: nothing will answer it (absent: nothing more to do). */
  cancelled?(): void;
}

/** What a request the client cancelled comes to for the proxy's own steps (a merged list, a resource asked around). */
const CANCELLED_BY_CLIENT = new ProxyError('CLIENT_GONE', 'The client cancelled the request');

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
  /** The ids of the proxy's own requests on this server session: no client can guess them. */
  readonly initializeId = `mcp-negotiate-proxy-${randomUUID()}`;
  readonly levelId = `mcp-negotiate-proxy-${randomUUID()}`;

  constructor(readonly server: AggregateServer) {}

  fail(err: ProxyError): void {
    for (const waiter of this.waiting.values()) waiter.failed(err);
    this.waiting.clear();
  }
}

export interface AggregateSessionOptions {
  names: ServerNames<AggregateServer>;
  initializeTimeoutMs: number;
  /** How long what is merged waits for one server (MERGE_WAIT_MS, or less). */
  mergeWaitMs: number;
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
  /** Progress tokens of requests under way, by the server they were sent to: another server's progress for them is dropped. */
  private readonly progress = new Map<unknown, Link>();
  /** Requests waiting for their server's session to be initialized, and those of them the client cancelled meanwhile. */
  private readonly unsent = new Set<JsonRpcId>();
  private readonly cancelledEarly = new Set<JsonRpcId>();

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
        this.cancel(cancelled.requestId, frame);
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

  /**
   * The client gave up request `id`: the server it went to is told, and nothing waits for its answer any more
   * (the relay answers the client); one not sent yet is not sent.
   */
  private cancel(id: JsonRpcId, frame: Frame): void {
    if (this.unsent.delete(id)) return void this.cancelledEarly.add(id);
    for (const link of this.links.values()) {
      const waiter = link.waiting.get(id);
      if (!waiter) continue;
      link.waiting.delete(id);
      link.connection.send(frame);
      waiter.cancelled?.();
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
        server.known && !this.o.eager ? Promise.resolve(server.known) : this.opened(server).catch(() => server.known),
      ),
    );
    this.reply(req.id, mergedInitialize(this.o.names, seen, params.protocolVersion));
  }

  /** The server's session for this client, opened on first use; initialized once the client's initialize is known. */
  private link(server: AggregateServer): Link {
    const open = this.links.get(server);
    if (open) return open;
    // Nothing is opened for a session that ended (a request that was under way when it did goes no further).
    if (this.ended) throw new ProxyError('CLIENT_GONE', 'The client session ended');
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
        const opened = link.connection !== undefined && !link.closed;
        link.closed = true;
        link.fail(err);
        this.forgetAsks(link);
        if (opened) void link.connection.close();
        reject(err);
      };
      const answered = (msg: JsonRpcResponse) => {
        clearTimeout(timer);
        if (msg.error)
          return gone(server.failure('UPSTREAM_PROTOCOL', `refused initialize: ${clip(maskSecrets(msg.error.message), 1000)}`));
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
          if (isResponse(msg) && !link.initialized && msg.id === link.initializeId) return answered(msg);
          this.fromServer(link, frame, relatedId);
        },
        onFailure: (id, err) => {
          if (!link.initialized && id === link.initializeId) return gone(server.failure(err.code, `failed: ${err.message}`));
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
        timer = setTimeout(
          () => gone(server.failure('REQUEST_TIMEOUT', `did not answer initialize within ${this.o.initializeTimeoutMs} ms`)),
          this.o.initializeTimeoutMs,
        );
        link.connection.send({ msg: { jsonrpc: '2.0', id: link.initializeId, method: 'initialize', params } });
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
      // Progress for a request of another server's (its token guessed, or reused): not this server's to give.
      if (msg.method === PROGRESS && this.progress.get(progressTokenOf(msg)) !== link)
        return this.o.log.debug({ server: link.server.name }, 'dropped progress for a request the server does not have');
      return this.events.onMessage(frame, relatedId);
    }
    const req = msg as JsonRpcRequest;
    // A server that keeps asking a client that does not answer is refused, not remembered without end; one
    // server may hold half of what the session keeps.
    if (this.asked.size >= MAX_ASKS || link.asks.size >= MAX_ASKS / 2) {
      const error = {
        code: INTERNAL_ERROR,
        message: `Too many requests to the client are unanswered already (${link.asks.size} of this server's)`,
      };
      return link.connection.send({ msg: { jsonrpc: '2.0', id: req.id, error } });
    }
    const id = this.nextAsk++;
    this.asked.set(id, { link, id: req.id });
    link.asks.set(req.id, id);
    this.events.onMessage({ msg: { ...req, id } }, relatedId);
  }

  /** A server session is gone: its requests to the client are over, and the client is told. */
  private forgetAsks(link: Link): void {
    for (const id of link.asks.values()) {
      this.asked.delete(id);
      if (!this.ended) this.events.onMessage({ msg: cancelledNotification(id, 'The server ended') });
    }
    link.asks.clear();
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
  private forward(server: AggregateServer, id: JsonRpcId, frame: Frame, waitMs?: number): Promise<Frame> {
    return new Promise((answered, failed) => {
      // Past `waitMs` the server is left out: its answer is not waited for, and it is told so.
      const timer =
        waitMs === undefined
          ? undefined
          : setTimeout(() => {
              const late = server.failure('REQUEST_TIMEOUT', `did not answer within ${waitMs} ms`);
              const link = this.links.get(server);
              const waiter = link?.waiting.get(id);
              if (!link || !waiter) return failed(late);
              link.waiting.delete(id);
              link.connection.send({ msg: cancelledNotification(id, 'Too slow') });
              waiter.failed(late);
            }, waitMs);
      this.sendTo(server, id, frame, {
        answered: (answer) => (clearTimeout(timer), answered(answer)),
        failed: (err) => (clearTimeout(timer), failed(err)),
        cancelled: () => (clearTimeout(timer), failed(CANCELLED_BY_CLIENT)),
      });
    });
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
    const req = frame.msg as JsonRpcRequest;
    const token = requestProgressToken(req.params);
    let link: Link;
    try {
      link = this.link(server);
    } catch (err) {
      return waiter.failed(err as ProxyError);
    }
    const over = () => token !== undefined && this.progress.get(token) === link && this.progress.delete(token);
    const counted: Waiter = {
      answered: (answer) => {
        over();
        server.counted(req.method, (answer.msg as JsonRpcResponse).error ? 'error' : 'ok');
        waiter.answered(answer);
      },
      failed: (err) => {
        over();
        server.counted(req.method, 'failed');
        waiter.failed(err);
      },
      cancelled: () => {
        over();
        waiter.cancelled?.();
      },
    };
    const go = () => {
      this.unsent.delete(id);
      if (this.cancelledEarly.delete(id)) return counted.cancelled!();
      if (link.closed || this.ended) return counted.failed(server.failure('UPSTREAM_CLOSED', 'ended'));
      if (token !== undefined) this.progress.set(token, link);
      link.waiting.set(id, counted);
      link.connection.send(frame);
    };
    if (link.initialized) return go();
    this.unsent.add(id);
    link.ready.then(go, (err: ProxyError) => (this.unsent.delete(id), counted.failed(err)));
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
        if (err === CANCELLED_BY_CLIENT) return;
        this.o.log.debug({ server: server.name, err: (err as Error).message }, 'a server could not be asked for a resource');
      }
    }
    const answer = accepted ?? refusal;
    if (answer) return void (this.ended || this.events.onMessage(answer, req.id));
    this.error(req.id, { code: -32002, message: `Resource not found: ${uri} (no server has it)` });
  }

  /** The server's session, initialized; rejects when that fails or takes longer than mergeWaitMs (it goes on opening). */
  private opened(server: AggregateServer): Promise<McpResult> {
    let link: Link;
    try {
      link = this.link(server);
    } catch (err) {
      return Promise.reject(err);
    }
    if (link.initialized) return link.ready;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      const ms = this.o.mergeWaitMs;
      timer = setTimeout(() => reject(server.failure('REQUEST_TIMEOUT', `did not initialize within ${ms} ms`)), ms);
    });
    return Promise.race([link.ready, late]).finally(() => clearTimeout(timer));
  }

  /** The servers whose initialize offered `capability` (each is opened to know). */
  private async withCapability(capability: string): Promise<AggregateServer[]> {
    const offers = await Promise.all(
      this.o.names.servers.map((server) =>
        this.opened(server).then(
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
    const servers = positions ? names.servers.filter((s) => Object.hasOwn(positions, s.name)) : await this.withCapability(kind.capability);
    const pages = await Promise.all(
      servers.map(async (server) => {
        const params: Record<string, unknown> = { ...req.params };
        delete params.cursor;
        if (positions) params.cursor = positions[server.name];
        try {
          const answer = (await this.forward(server, req.id, { msg: { ...req, params } }, this.o.mergeWaitMs)).msg as JsonRpcResponse;
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
      const cursor = result.nextCursor;
      if (typeof cursor !== 'string' || cursor === '') continue;
      // The merged cursor holds every server's: one server's may not crowd out the others'.
      if (cursor.length <= MAX_SERVER_CURSOR) next[server.name] = cursor;
      else
        log.warn(
          { server: server.name, length: cursor.length },
          `a server's cursor is too long: its further pages of ${req.method} are left out`,
        );
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
    if (!link.closed) link.connection.send({ msg: { jsonrpc: '2.0', id: link.levelId, method: 'logging/setLevel', params: { level } } });
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
