/**
 * The upstream side of legacy sessions: each client session's relay, connected to an upstream
 * session of its own (a stdio process, capped by upstream.maxProcesses; or an HTTP session, also
 * one another replica started), or to sessions borrowed from the pool (upstream.sessions:
 * shared), or, in front of a 2026-07-28-only upstream, to the bridge that serves it statelessly
 * (a dual-era upstream gets sessions of its own, as a legacy one); with the filter chain bound to it.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import type { Metrics } from '../ops/metrics.js';
import type { UpstreamObserver } from '../upstream/client.js';
import type { UpstreamEndpoint } from '../upstream/connector.js';
import type { SharedUpstreamSessions } from '../upstream/shared.js';
import { clientSession } from '../upstream/client-session.js';
import type { ToolCatalog } from '../upstream/tool-catalog.js';
import { TOOLS_LIST_CHANGED } from '../upstream/tool-pins.js';
import type { ResumedSession, UpstreamConnection, UpstreamEvents } from '../upstream/types.js';
import type { Requester } from './context.js';
import type { BoundFilters, FilterChain, FiltersSnapshot } from './filters.js';
import { RelaySession, type ClientSink } from './relay.js';

export interface LegacyRelaysOptions {
  connector: UpstreamEndpoint;
  /** Present with upstream.sessions: shared (a stdio upstream). */
  shared?: SharedUpstreamSessions;
  /** The filters new sessions bind, as the config says now. */
  filters(): FilterChain;
  maxProcesses: number;
  requestTimeoutMs: number;
  initializeTimeoutMs: number;
  /** How long a client gets to answer a modern upstream's input request. */
  inputTimeoutMs: number;
  /** What the proxy knows of the upstream's tools (a modern upstream's Mcp-Param-* headers). */
  tools: ToolCatalog;
  counters: Metrics['counters'];
  observe: UpstreamObserver;
}

export class LegacyRelays {
  /** Stdio processes held by sessions, capped by upstream.maxProcesses. */
  private processes = 0;
  /** Processes their sessions let go of that have not exited yet (their slots are free already), capped the same. */
  private exiting = 0;

  constructor(private readonly o: LegacyRelaysOptions) {}

  /** A new client session of `who`; throws TOO_MANY_SESSIONS when every process allowed is taken. */
  open(sink: ClientSink, log: Logger, who: Requester): RelaySession {
    this.o.counters.sessionsStarted++;
    return this.relay(sink, log, who, this.o.filters().forSession(log, who));
  }

  /** Goes on with a session another replica (or this one, before a restart) started: its upstream session and its filters' snapshot. */
  resume(sink: ClientSink, log: Logger, who: Requester, upstream: ResumedSession, snapshot: FiltersSnapshot): RelaySession {
    return this.relay(sink, log, who, this.o.filters().restore(snapshot, log), upstream);
  }

  /** Why a new session could not have an upstream now (every stdio process allowed is taken), or undefined when it could. */
  full(): ProxyError | undefined {
    const max = this.o.maxProcesses;
    if (!this.ownProcesses()) return undefined;
    if (this.processes >= max)
      return new ProxyError('TOO_MANY_SESSIONS', `All ${max} upstream processes for sessions are in use (upstream.maxProcesses)`);
    // A process being stopped takes up to 2 × timeouts.shutdownGraceMs; churn must not pile them up.
    if (this.exiting >= max)
      return new ProxyError(
        'TOO_MANY_SESSIONS',
        `${max} upstream processes for sessions are still exiting (upstream.maxProcesses); try again shortly`,
      );
    return undefined;
  }

  /** Whether ending one idle session would make room: its process joins those still exiting, which are capped too. */
  evictionHelps(): boolean {
    return !this.ownProcesses() || this.exiting + 1 < this.o.maxProcesses;
  }

  /** Whether each session holds a stdio process of its own (isolated sessions of a legacy stdio upstream). */
  private ownProcesses(): boolean {
    const { connector, shared } = this.o;
    return !shared && connector.kind === 'stdio' && connector.era.now !== 'modern';
  }

  private relay(sink: ClientSink, log: Logger, who: Requester, filters: BoundFilters, resume?: ResumedSession): RelaySession {
    const { shared } = this.o;
    // The session hears changed tool definitions the pins announce until it ends.
    let stopHearing: (() => void) | undefined;
    const heard: ClientSink = {
      deliver: (frame, relatedId) => sink.deliver(frame, relatedId),
      cancelled: sink.cancelled && ((id) => sink.cancelled!(id)),
      end: (reason) => {
        stopHearing?.();
        sink.end(reason);
      },
    };
    const relay = new RelaySession((events) => this.connect(events, log, who, resume), heard, {
      requestTimeoutMs: this.o.requestTimeoutMs,
      initializeTimeoutMs: this.o.initializeTimeoutMs,
      shaper: filters,
      counters: this.o.counters,
      // Shared sessions go through the pool's client, which observes the upstream itself.
      observe: shared ? undefined : this.o.observe,
      log,
    });
    filters.bindUpstream(relay, this.o.requestTimeoutMs);
    stopHearing = this.o.tools.pins?.onAnnounce(() => relay.announce(TOOLS_LIST_CHANGED));
    return relay;
  }

  private connect(events: UpstreamEvents, log: Logger, who: Requester, resume?: ResumedSession): UpstreamConnection {
    const { connector, requestTimeoutMs, inputTimeoutMs, tools } = this.o;
    return clientSession(connector, events, {
      who: { principal: who.principal, clientKey: who.client },
      tools,
      requestTimeoutMs,
      inputTimeoutMs,
      legacy: (ev) => this.legacySession(ev, log, who, resume),
      resuming: resume !== undefined,
      log,
    });
  }

  /** A shared session, or one of its own (an HTTP session, or a stdio process while any is free). */
  private legacySession(events: UpstreamEvents, log: Logger, who: Requester, resume?: ResumedSession): UpstreamConnection {
    const { connector, shared } = this.o;
    if (shared) return shared.connect(events, log, who);
    if (connector.kind !== 'stdio') return connector.connect(events, log, { resume });
    const full = this.full();
    if (full) throw new ProxyError(full.code, `${full.message}; try again when a session ends`);
    return this.holdProcess(events, log);
  }

  /**
   * A stdio process for one session. Its slot is free as soon as the session lets go of it (an
   * evicted or deleted session's successor need not wait for the exit); until it has exited it
   * counts as exiting.
   */
  private holdProcess(events: UpstreamEvents, log: Logger): UpstreamConnection {
    let state: 'held' | 'exiting' | 'gone' = 'held';
    this.processes++;
    const connection = this.o.connector.connect(
      {
        ...events,
        onClose: (err) => {
          if (state === 'held') this.processes--;
          if (state === 'exiting') this.exiting--;
          state = 'gone';
          events.onClose(err);
        },
      },
      log,
      {},
    );
    // Methods named one by one: a connection may be a class instance, whose methods a spread would not copy.
    return {
      send: (frame) => connection.send(frame),
      session: connection.session && (() => connection.session!()),
      listen: connection.listen && ((on) => connection.listen!(on)),
      close: () => {
        if (state === 'held') {
          state = 'exiting';
          this.processes--;
          this.exiting++;
        }
        return connection.close();
      },
    };
  }
}
