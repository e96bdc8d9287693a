/**
 * Upstream sessions for modern (stateless) requests: a bounded pool of proxy-initialized legacy
 * sessions, keyed by the client capabilities they were initialized with (what changes a legacy
 * server's behaviour). Requests share a session, except an exclusive lease: one call alone on a
 * session, for a stdio upstream that may ask the client for input during the call and cannot say
 * which call its request belongs to. A session that dies (crash, 404) leaves the pool; the next
 * acquire initializes a new one. Idle sessions are reaped.
 */
import type { Logger } from 'pino';
import { canonicalJson } from '../jsonrpc/canonical.js';
import { ProxyError } from '../jsonrpc/errors.js';
import type { JsonRpcNotification } from '../jsonrpc/message.js';
import { UpstreamClient, type UpstreamObserver } from './client.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export interface UpstreamLease {
  readonly client: UpstreamClient;
  release(): void;
}

export interface UpstreamPoolOptions {
  connect(events: UpstreamEvents, log: Logger): UpstreamConnection;
  /** Most upstream sessions at once (each may be a child process). */
  maxSessions: number;
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
  /** Notifications of any pooled session that belong to no call (list_changed, resources/updated). */
  onUnrelated?(n: JsonRpcNotification, client: UpstreamClient): void;
}

/** The capabilities a pooled upstream session is initialized with: those a legacy server acts on. */
export function upstreamCapabilities(declared: Record<string, any>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of ['sampling', 'elicitation', 'roots']) {
    if (typeof declared[name] === 'object' && declared[name] !== null) out[name] = declared[name];
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
  client: UpstreamClient;
  leases: number;
  exclusive: boolean;
  lastUsed: number;
}

export class UpstreamPool {
  private readonly entries = new Set<Entry>();
  private readonly reaper: NodeJS.Timeout;
  private closing = false;
  private spare: Spare | undefined;

  constructor(private readonly opts: UpstreamPoolOptions) {
    this.reaper = setInterval(() => this.reapIdle(), Math.max(1000, Math.min(opts.idleMs / 2, 30_000)));
    this.reaper.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /** A ready session initialized with `capabilities`; throws a ProxyError when none can be had. */
  async acquire(capabilities: Record<string, unknown>, exclusive = false): Promise<UpstreamLease> {
    if (this.closing) throw new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down');
    const key = canonicalJson(capabilities);
    const entry = this.find(key, exclusive) ?? this.create(key, capabilities);
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

  /** The upstream's initialize result (from any live session, or a new one without capabilities). */
  async server(): Promise<Record<string, unknown>> {
    for (const e of this.entries) if (e.client.server) return e.client.server;
    const lease = await this.acquire({});
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

  private create(key: string, capabilities: Record<string, unknown>): Entry {
    if (this.entries.size >= this.opts.maxSessions) this.evictIdle();
    if (this.entries.size >= this.opts.maxSessions) {
      throw new ProxyError('UPSTREAM_BUSY', `All ${this.opts.maxSessions} upstream sessions for modern requests are busy; try again shortly (modern.pool.maxSessions)`);
    }
    const log = this.opts.log.child({ pool: this.entries.size + 1 });
    const entry: Entry = { key, leases: 0, exclusive: false, lastUsed: Date.now(), client: undefined! };
    entry.client = new UpstreamClient((events) => this.takeSpare(events) ?? this.opts.connect(events, log), {
      capabilities,
      clientInfo: this.opts.clientInfo,
      initializeTimeoutMs: this.opts.initializeTimeoutMs,
      observe: this.opts.observe,
      log,
      onUnrelated: (n) => this.opts.onUnrelated?.(n, entry.client),
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

  /** Frees a slot held by a session nobody uses (the oldest first). */
  private evictIdle(): void {
    let oldest: Entry | undefined;
    for (const e of this.entries) if (e.leases === 0 && (!oldest || e.lastUsed < oldest.lastUsed)) oldest = e;
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
