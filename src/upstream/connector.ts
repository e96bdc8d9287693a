/**
 * Connects upstream sessions to the configured server (a stdio child, or a Streamable HTTP
 * endpoint through one keep-alive dispatcher) and tells what connecting shows about it: an
 * answer means usable, an unreachable endpoint or a failed start means not (readiness), and the
 * last exit the proxy did not ask for is kept for the probes. It also runs the start-up check: one session initialized,
 * then ended (an upstream that speaks 2026-07-28: one server/discover); and it knows which era the upstream speaks (era.ts).
 */
import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { Agent } from 'undici';
import { maskSecrets } from '../ops/mask.js';
import { UpstreamClient } from './client.js';
import { refusedHandshake, speaksModern, UpstreamEra, type EraSetting, type UpstreamServer } from './era.js';
import { HttpUpstream } from './http.js';
import type { ListCache } from './list-cache.js';
import { bridgedSession, type ModernBridgeOptions } from './modern-bridge.js';
import { ModernHttpUpstream, type ModernUpstream } from './modern-http.js';
import { ModernStdioUpstream } from './modern-stdio.js';
import { createStdioUpstream, killGroup } from './stdio.js';
import type { ResumedSession, UpstreamConnection, UpstreamEvents, UpstreamSpec } from './types.js';
import { ProxyError } from '../jsonrpc/errors.js';
import { modernEnvelope } from '../mcp/eras.js';

export interface ConnectorOptions {
  spec: UpstreamSpec;
  /** Masked, for logs and probes. */
  target: string;
  /**
   * HTTP: a legacy client's session holds the upstream's GET stream only while the client's is
   * here (replicas sharing a secret take turns). Other sessions always hold theirs.
   */
  getFollowsClient: boolean;
  shutdownGraceMs: number;
  clientInfo: { name: string; version: string };
  /** Where modern requests' list answers are kept (a 2026-07-28 server's, for modern clients and bridged sessions alike). */
  lists?: ListCache;
  /** Which era the upstream speaks (upstream.era); `auto` asks an HTTP upstream. */
  era: EraSetting;
  /** How long the era question may take before the upstream counts as legacy. */
  discoverTimeoutMs: number;
  log: Logger;
  /** What traffic shows: the upstream answered (true), or could not be used (false, why). */
  witness(usable: boolean, cause?: string): void;
}

/**
 * What the rest of the proxy uses of the upstream side: one server (UpstreamConnector) or several
 * behind one endpoint (aggregate/endpoint.ts).
 */
export interface UpstreamEndpoint {
  readonly kind: UpstreamSpec['kind'];
  readonly era: UpstreamEra;
  /** The upstream as a modern client speaks to it (used while it speaks 2026-07-28). */
  readonly modern: ModernUpstream;
  connect(events: UpstreamEvents, log: Logger, clientSession?: { resume?: ResumedSession }): UpstreamConnection;
  bridge(events: UpstreamEvents, o: Omit<ModernBridgeOptions, 'upstream' | 'server'>): UpstreamConnection;
  /** Rejects with the cause when the upstream cannot be used now (readiness). */
  probe(timeoutMs: number, log: Logger): Promise<void>;
  /** What the probes say about it (masked). */
  report(): Record<string, unknown>;
  /** Live stdio children. */
  readonly children: { readonly size: number };
  /** With several servers: the one a request names (`target`: its tool, prompt or resource), for the access log. */
  serverOf?(method: string, target: string): string | undefined;
  /** With several servers: each one's name, and whether it is usable (undefined: not known yet), for /metrics. */
  serverStatus?(): Array<{ name: string; up: boolean | undefined }>;
  killChildrenNow(): void;
  close(): Promise<void>;
}

export class UpstreamConnector implements UpstreamEndpoint {
  /** Live stdio children, so that the process can reap them all on exit. */
  readonly children = new Set<ChildProcess>();
  /** The last exit of a process the proxy did not stop itself (a crash, an upstream that quit). */
  private lastExit: string | undefined;
  // The proxy's own timers decide when a request has taken too long; undici's 300 s defaults
  // would cut off long tool calls and quiet GET streams.
  private readonly dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null, bodyTimeout: 0, headersTimeout: 0 });

  /** The upstream as a modern client speaks to it: one request per POST, or one shared stdio process. */
  readonly modern: ModernUpstream;
  readonly era: UpstreamEra;

  constructor(private readonly o: ConnectorOptions) {
    const spec = o.spec;
    const log = o.log.child({ upstreamEra: 'modern' });
    const witnessed = this.witnessed(
      spec.kind === 'http'
        ? new ModernHttpUpstream(spec, this.dispatcher, log)
        : new ModernStdioUpstream((events) => this.connect(events, log), log),
    );
    const modern = (this.modern = o.lists ? { ...witnessed, call: o.lists.wrap(witnessed) } : witnessed);
    const discover = () =>
      modern.call(
        {
          jsonrpc: '2.0',
          id: 'mcp-negotiate-proxy-discover',
          method: 'server/discover',
          params: { _meta: modernEnvelope({}, o.clientInfo) },
        },
        { timeoutMs: o.discoverTimeoutMs },
      );
    const takesInitialize = () => this.takesInitialize(o.discoverTimeoutMs, o.log.child({ eraCheck: true }));
    this.era = new UpstreamEra({ setting: o.era, discover, takesInitialize, askFirst: spec.kind === 'http', log: o.log });
  }

  get kind(): UpstreamSpec['kind'] {
    return this.o.spec.kind;
  }

  /**
   * One upstream session. `clientSession`: a legacy client's own, which may move between replicas
   * (`resume`: go on with one another replica started); its GET stream may follow the client's.
   * Any other (pooled, the start-up check) is this replica's alone and holds its GET stream: a
   * server's requests and notifications related to no request arrive there.
   */
  connect(events: UpstreamEvents, log: Logger, clientSession?: { resume?: ResumedSession }): UpstreamConnection {
    /** Set when the proxy itself ends the session (the client left, the start-up check is done): that exit is no failure. */
    let stopping = false;
    const watched = this.watched(events, () => stopping);
    const spec = this.o.spec;
    const connection =
      spec.kind === 'http'
        ? new HttpUpstream(spec, watched, log, {
            dispatcher: this.dispatcher,
            defaultRetryMs: 1000,
            maxResumes: 5,
            resume: clientSession?.resume,
            getFollowsClient: this.o.getFollowsClient && clientSession !== undefined,
          })
        : createStdioUpstream(spec, watched, log, { shutdownGraceMs: this.o.shutdownGraceMs, children: this.children });
    const close = connection.close.bind(connection);
    connection.close = () => {
      stopping = true;
      return close();
    };
    return connection;
  }

  /** Modern requests, with what they show noted for readiness: an answer, or an upstream that could not be reached. */
  private witnessed(upstream: ModernUpstream): ModernUpstream {
    const { witness } = this.o;
    return {
      call: (req, o) =>
        upstream.call(req, o).then(
          (answer) => (witness(true), answer),
          (err: unknown) => {
            if (err instanceof ProxyError && err.code === 'UPSTREAM_UNREACHABLE') witness(false, err.message);
            throw err;
          },
        ),
      close: async () => upstream.close?.(),
      mirrorsHeaders: upstream.mirrorsHeaders,
    };
  }

  /** `events`, with what they show noted for readiness and the probes. */
  private watched(events: UpstreamEvents, stopping = () => false): UpstreamEvents {
    const { witness } = this.o;
    return {
      onMessage(frame, relatedId) {
        witness(true);
        events.onMessage(frame, relatedId);
      },
      onFailure(id, err) {
        if (err.code === 'UPSTREAM_UNREACHABLE') witness(false, err.message);
        events.onFailure(id, err);
      },
      onClose: (err) => {
        if (err.code === 'UPSTREAM_START_FAILED') witness(false, err.message);
        else if (err.code === 'UPSTREAM_CLOSED' && !stopping()) this.lastExit = maskSecrets(err.message);
        events.onClose(err);
      },
    };
  }

  /** A legacy client session served by the modern upstream (see modern-bridge.ts). */
  bridge(events: UpstreamEvents, o: Omit<ModernBridgeOptions, 'upstream' | 'server'>): UpstreamConnection {
    return bridgedSession(events, { ...o, upstream: this.modern, server: () => this.era.server() });
  }

  /**
   * Starts and initializes one upstream session, then ends it (an upstream that speaks
   * 2026-07-28: asks it server/discover); rejects with the cause when that fails.
   */
  async probe(timeoutMs: number, log: Logger, seen: (server: UpstreamServer) => void = () => undefined): Promise<void> {
    const known = this.era.now;
    if (speaksModern(known)) return seen(await this.era.server(true));
    // Not known yet: asking is the probe (a modern answer is fresh).
    if (known === undefined && speaksModern(await this.era.resolve())) return seen(await this.era.server());
    const client = new UpstreamClient((events) => this.connect(events, log), {
      capabilities: {},
      clientInfo: this.o.clientInfo,
      initializeTimeoutMs: timeoutMs,
      log,
    });
    try {
      seen(await client.ready);
    } catch (err) {
      // Only a 2026-07-28 server refuses the legacy handshake for its version: speak to it in that era.
      if (!this.era.tookRefusal(err)) throw err;
      if (!speaksModern(await this.era.resolve())) throw err;
      seen(await this.era.server(true));
    } finally {
      await client.close();
    }
  }

  /**
   * Whether the upstream takes an initialize of the proxy's own (the session is ended at once); rejects when it
   * said nothing (see refusedHandshake).
   */
  private async takesInitialize(timeoutMs: number, log: Logger): Promise<boolean> {
    const client = new UpstreamClient((events) => this.connect(events, log), {
      capabilities: {},
      clientInfo: this.o.clientInfo,
      initializeTimeoutMs: timeoutMs,
      log,
    });
    try {
      await client.ready;
      return true;
    } catch (err) {
      if (refusedHandshake(err)) return false;
      throw err;
    } finally {
      await client.close();
    }
  }

  /** What the probes say about the upstream (masked). */
  report(): Record<string, unknown> {
    return {
      kind: this.o.spec.kind,
      target: this.o.target,
      era: this.era.now ?? 'unknown',
      ...(this.o.spec.kind === 'stdio' ? { processes: this.children.size } : {}),
      ...(this.lastExit ? { lastExit: this.lastExit } : {}),
    };
  }

  /** Last resort at process exit: SIGKILL every child still alive. */
  killChildrenNow(): void {
    for (const child of this.children) killGroup(child, 'SIGKILL');
  }

  async close(): Promise<void> {
    await this.modern.close?.();
    await this.dispatcher.close().catch(() => undefined);
  }
}
