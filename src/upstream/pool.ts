/**
 * Upstream sessions for modern (stateless) requests and shared legacy sessions: a bounded pool of
 * proxy-initialized legacy sessions, keyed by the principal they serve and the client
 * capabilities they were initialized with (what changes a legacy server's behaviour). A session
 * never serves two principals, unless the server is declared stateless (`sharePrincipals`).
 * Requests share a session, except an exclusive lease: one call alone on a session, for a call
 * that may ask the client for input (over stdio nothing says which call such a request belongs
 * to). Fairness: one client holds at most `perClient` sessions (those it started, and those it
 * holds alone), and exclusive leases at most `maxExclusive`, so calls that cannot ask for input
 * always find room. A session that dies
 * (crash, 404) leaves the pool; the next acquire initializes a new one. Idle sessions are reaped.
 */
import type { Logger } from 'pino';
import { canonicalJson } from '../jsonrpc/canonical.js';
import { ProxyError } from '../jsonrpc/errors.js';
import { isObject, type JsonRpcNotification, type JsonRpcRequest } from '../jsonrpc/message.js';
import type { RequestContext } from '../mcp/request-context.js';
import type { CallOptions, UpstreamAnswer, UpstreamCall } from './call.js';
import { UpstreamClient, type UpstreamObserver } from './client.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export interface UpstreamLease {
  readonly client: UpstreamClient;
  release(): void;
}

/** Who a lease is for: the principal whose session it may use, the client it counts against, and the capabilities the session needs. */
/**
 * Who a lease is for: the sessions it may share are keyed by the principal and the capabilities; per-client
 * limits count the client key.
 */
export type PoolKey = Pick<RequestContext, 'principal' | 'clientKey' | 'capabilities'>;

export interface UpstreamPoolOptions {
  connect(events: UpstreamEvents, log: Logger): UpstreamConnection;
  /** Most upstream sessions at once (each may be a child process). */
  maxSessions: number;
  /** Most sessions one client holds at once (default: all). */
  perClient?: number;
  /** Most sessions held by exclusive leases at once (default: all). */
  maxExclusive?: number;
  /** The server is stateless: one session may serve every principal. */
  sharePrincipals?: boolean;
  /** A session no lease has used for this long is closed. */
  idleMs: number;
  initializeTimeoutMs: number;
  clientInfo: { name: string; version: string };
  log: Logger;
  /**
   * Keep one upstream connection started but not yet initialized (a stdio child), so that a new
   * session (a new capability set, or a call that needs a session alone) waits for an initialize
   * rather than a process start. Started with the first session, never before.
   */
  warmSpare?: boolean;
  /** Upstream latency, for /metrics. */
  observe?: UpstreamObserver;
}

/**
 * Hears a pooled session's notifications that belong to no call (list_changed, resources/updated), with the
 * principal it serves ('' when shared).
 */
export type UnrelatedListener = (n: JsonRpcNotification, principal: string) => void;

/** The capability flags a legacy server acts on, by capability; nothing else reaches the pool key. */
const KNOWN_FLAGS: Record<string, string[]> = { sampling: ['context', 'tools'], elicitation: ['form', 'url'], roots: ['listChanged'] };

/** Does a client declare a capability a legacy server may ask it to use during a call (sampling, elicitation, roots)? */
export function declaresInput(declared: Record<string, unknown>): boolean {
  for (const name in KNOWN_FLAGS) if (isObject(declared[name])) return true;
  return false;
}

/**
 * The capabilities a pooled upstream session is initialized with: sampling, elicitation and
 * roots, each with only the flags the revision defines (a client inventing members gets no
 * session of its own).
 */
export function upstreamCapabilities(declared: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, flags] of Object.entries(KNOWN_FLAGS)) {
    const given = declared[name];
    if (!isObject(given)) continue;
    const kept: Record<string, unknown> = {};
    for (const flag of flags) if (given[flag] !== undefined && given[flag] !== false) kept[flag] = flag === 'listChanged' ? true : {};
    out[name] = kept;
  }
  return out;
}

/** A started connection waiting for its session; events that come before it is taken are replayed. */
interface Spare {
  connection: UpstreamConnection;
  take(events: UpstreamEvents): UpstreamConnection | undefined;
}

interface Entry {
  key: string;
  principal: string;
  /** The client it counts against (per-client fairness): the one it was started for, or last held alone by. */
  owner: string;
  client: UpstreamClient;
  leases: number;
  exclusive: boolean;
  lastUsed: number;
}

export class UpstreamPool implements UpstreamCall {
  private readonly entries = new Set<Entry>();
  private readonly reaper: NodeJS.Timeout;
  private closing = false;
  private spare: Spare | undefined;
  private unrelated: UnrelatedListener | undefined;

  constructor(private readonly opts: UpstreamPoolOptions) {
    this.reaper = setInterval(() => this.reapIdle(), Math.max(1000, Math.min(opts.idleMs / 2, 30_000)));
    this.reaper.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Where notifications that belong to no call go. */
  onUnrelated(listener: UnrelatedListener): void {
    this.unrelated = listener;
  }

  /** A ready session for `who`; throws a ProxyError when none can be had. */
  async acquire(who: PoolKey, exclusive = false): Promise<UpstreamLease> {
    if (this.closing) throw new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down');
    const principal = this.opts.sharePrincipals ? '' : who.principal;
    const capabilities = upstreamCapabilities(who.capabilities);
    const key = `${JSON.stringify(principal)} ${canonicalJson(capabilities)}`;
    const found = this.find(key, exclusive);
    if (found && exclusive) {
      this.checkExclusive(); // an exclusive lease only ever finds an idle session
      this.takeOver(found, who.clientKey);
    }
    const entry = found ?? this.create(key, principal, { ...who, capabilities }, exclusive);
    entry.leases++;
    entry.exclusive ||= exclusive;
    entry.lastUsed = Date.now();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      entry.leases--;
      if (entry.leases === 0) entry.exclusive = false;
      entry.lastUsed = Date.now();
    };
    try {
      await entry.client.ready;
    } catch (err) {
      release();
      throw err;
    }
    return { client: entry.client, release };
  }

  /**
   * One call (UpstreamCall) on a session of its caller's, borrowed for the call and shared with others: never one
   * that may ask the client for input.
   */
  async call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    for (let attempt = 1; ; attempt++) {
      const lease = await this.acquire(o.caller ?? { principal: '', clientKey: '', capabilities: {} });
      try {
        return await lease.client.call(req, o);
      } catch (err) {
        // The upstream forgot the session (404) without running the request: once more on a new one.
        if (attempt > 1 || !(err instanceof ProxyError) || err.code !== 'UPSTREAM_SESSION_EXPIRED') throw err;
      } finally {
        lease.release();
      }
    }
  }

  /** The upstream's initialize result (from any live session, or a new one without capabilities). */
  async server(): Promise<Record<string, unknown>> {
    for (const e of this.entries) if (e.client.server) return e.client.server;
    const lease = await this.acquire({ principal: '', clientKey: '', capabilities: {} });
    lease.release();
    return lease.client.server!;
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.reaper);
    const spare = this.spare;
    this.spare = undefined;
    await spare?.connection.close();
    await Promise.all([...this.entries].map((e) => e.client.close()));
    this.entries.clear();
  }

  private find(key: string, exclusive: boolean): Entry | undefined {
    for (const e of this.entries) {
      if (e.key !== key || e.client.closed || e.exclusive) continue;
      if (!exclusive || e.leases === 0) return e;
    }
    return undefined;
  }

  private create(key: string, principal: string, who: PoolKey, exclusive: boolean): Entry {
    if (exclusive) this.checkExclusive();
    this.checkClient(who.clientKey);
    if (this.entries.size >= this.opts.maxSessions) this.evictIdle(() => true);
    if (this.entries.size >= this.opts.maxSessions) {
      throw new ProxyError(
        'UPSTREAM_BUSY',
        `All ${this.opts.maxSessions} upstream sessions for modern requests are busy; try again shortly (modern.pool.maxSessions)`,
      );
    }
    const log = this.opts.log.child({ pool: this.entries.size + 1 });
    const entry: Entry = { key, principal, owner: who.clientKey, leases: 0, exclusive: false, lastUsed: Date.now(), client: undefined! };
    entry.client = new UpstreamClient((events) => this.takeSpare(events) ?? this.opts.connect(events, log), {
      capabilities: who.capabilities,
      clientInfo: this.opts.clientInfo,
      initializeTimeoutMs: this.opts.initializeTimeoutMs,
      observe: this.opts.observe,
      log,
      onUnrelated: (n) => this.unrelated?.(n, entry.principal),
      onClose: (err) => {
        this.entries.delete(entry);
        log.debug({ reason: err.code }, 'pooled upstream session ended');
      },
    });
    this.entries.add(entry);
    log.debug({ capabilities: key, sessions: this.entries.size }, 'pooled upstream session started');
    if (this.opts.warmSpare && !this.spare) this.spare = this.startSpare();
    return entry;
  }

  private takeSpare(events: UpstreamEvents): UpstreamConnection | undefined {
    const spare = this.spare;
    this.spare = undefined;
    return spare?.take(events);
  }

  private startSpare(): Spare {
    let target: UpstreamEvents | undefined;
    let died = false;
    const early: Array<(t: UpstreamEvents) => void> = [];
    const connection = this.opts.connect(
      {
        onMessage: (frame, related) => (target ? target.onMessage(frame, related) : early.push((t) => t.onMessage(frame, related))),
        onFailure: (id, err) => (target ? target.onFailure(id, err) : early.push((t) => t.onFailure(id, err))),
        onClose: (err) => {
          died = true;
          if (target) target.onClose(err);
          else if (this.spare?.connection === connection) this.spare = undefined;
        },
      },
      this.opts.log.child({ spare: true }),
    );
    return {
      connection,
      take(events) {
        if (died) return undefined;
        target = events;
        for (const replay of early.splice(0)) replay(events);
        return connection;
      },
    };
  }

  /** Refuses another session for `client` when it holds `perClient` already (after letting go of an idle one of its own). */
  private checkClient(client: string): void {
    const perClient = this.opts.perClient ?? Infinity;
    if (this.count((e) => e.owner === client) >= perClient) this.evictIdle((e) => e.owner === client);
    if (this.count((e) => e.owner === client) >= perClient) {
      throw new ProxyError(
        'UPSTREAM_BUSY',
        `This client holds ${perClient} upstream sessions already, the most one ` +
          'client may (modern.pool.perClient); try again when one of its calls ends',
      );
    }
  }

  /** An idle session another client started, held alone by `client` now: it counts against `client`. */
  private takeOver(entry: Entry, client: string): void {
    if (entry.owner === client) return;
    this.checkClient(client);
    entry.owner = client;
  }

  /** Refuses another exclusive lease when they hold `maxExclusive` sessions already. */
  private checkExclusive(): void {
    const max = this.opts.maxExclusive ?? Infinity;
    if (this.count((e) => e.exclusive) < max) return;
    throw new ProxyError(
      'UPSTREAM_BUSY',
      `Calls that may ask the client for input hold ${max} upstream sessions, the most they ` +
        'may (the rest of modern.pool.maxSessions is kept for other calls); try again shortly',
    );
  }

  private count(match: (e: Entry) => boolean): number {
    let n = 0;
    for (const e of this.entries) if (match(e)) n++;
    return n;
  }

  /** Frees a slot held by a session nobody uses (the oldest of those `match` accepts). */
  private evictIdle(match: (e: Entry) => boolean): void {
    let oldest: Entry | undefined;
    for (const e of this.entries) if (e.leases === 0 && match(e) && (!oldest || e.lastUsed < oldest.lastUsed)) oldest = e;
    if (oldest) this.retire(oldest);
  }

  private reapIdle(): void {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const e of this.entries) if (e.leases === 0 && e.lastUsed < cutoff) this.retire(e);
  }

  private retire(e: Entry): void {
    this.entries.delete(e);
    void e.client.close();
  }
}
