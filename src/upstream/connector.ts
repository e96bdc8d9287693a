/**
 * Connects upstream sessions to the configured server (a stdio child, or a Streamable HTTP
 * endpoint through one keep-alive dispatcher) and tells what connecting shows about it: an
 * answer means usable, an unreachable endpoint or a failed start means not (readiness), and the
 * last exit the proxy did not ask for is kept for the probes. It also runs the start-up check: one session initialized,
 * then ended.
 */
import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { Agent } from 'undici';
import { maskSecrets } from '../ops/mask.js';
import { UpstreamClient } from './client.js';
import { HttpUpstream } from './http.js';
import { createStdioUpstream, killGroup } from './stdio.js';
import type { ResumedSession, UpstreamConnection, UpstreamEvents, UpstreamSpec } from './types.js';

export interface ConnectorOptions {
  spec: UpstreamSpec;
  /** Masked, for logs and probes. */
  target: string;
  /** HTTP: hold the upstream's GET stream only while the client's is here (replicas take turns). */
  getFollowsClient: boolean;
  shutdownGraceMs: number;
  clientInfo: { name: string; version: string };
  /** What traffic shows: the upstream answered (true), or could not be used (false, why). */
  witness(usable: boolean, cause?: string): void;
}

export class UpstreamConnector {
  /** Live stdio children, so that the process can reap them all on exit. */
  readonly children = new Set<ChildProcess>();
  /** The last exit of a process the proxy did not stop itself (a crash, an upstream that quit). */
  private lastExit: string | undefined;
  // The proxy's own timers decide when a request has taken too long; undici's 300 s defaults
  // would cut off long tool calls and quiet GET streams.
  private readonly dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null, bodyTimeout: 0, headersTimeout: 0 });

  constructor(private readonly o: ConnectorOptions) {}

  get kind(): UpstreamSpec['kind'] {
    return this.o.spec.kind;
  }

  /** One upstream session (`resume`: go on with one another replica started). */
  connect(events: UpstreamEvents, log: Logger, resume?: ResumedSession): UpstreamConnection {
    const { witness } = this.o;
    /** Set when the proxy itself ends the session (the client left, the start-up check is done): that exit is no failure. */
    let stopping = false;
    const watched: UpstreamEvents = {
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
        else if (err.code === 'UPSTREAM_CLOSED' && !stopping) this.lastExit = maskSecrets(err.message);
        events.onClose(err);
      },
    };
    const spec = this.o.spec;
    const connection = spec.kind === 'http'
      ? new HttpUpstream(spec, watched, log, { dispatcher: this.dispatcher, defaultRetryMs: 1000, maxResumes: 5, resume, getFollowsClient: this.o.getFollowsClient })
      : createStdioUpstream(spec, watched, log, { shutdownGraceMs: this.o.shutdownGraceMs, children: this.children });
    const close = connection.close.bind(connection);
    connection.close = () => {
      stopping = true;
      return close();
    };
    return connection;
  }

  /** Starts and initializes one upstream session, then ends it; rejects with the cause when that fails. */
  async probe(timeoutMs: number, log: Logger): Promise<void> {
    const client = new UpstreamClient((events) => this.connect(events, log), { capabilities: {}, clientInfo: this.o.clientInfo, initializeTimeoutMs: timeoutMs, log });
    try {
      await client.ready;
    } finally {
      await client.close();
    }
  }

  /** What the probes say about the upstream (masked). */
  report(): Record<string, unknown> {
    return {
      kind: this.o.spec.kind,
      target: this.o.target,
      ...(this.o.spec.kind === 'stdio' ? { processes: this.children.size } : {}),
      ...(this.lastExit ? { lastExit: this.lastExit } : {}),
    };
  }

  /** Last resort at process exit: SIGKILL every child still alive. */
  killChildrenNow(): void {
    for (const child of this.children) killGroup(child, 'SIGKILL');
  }

  async close(): Promise<void> {
    await this.dispatcher.close().catch(() => undefined);
  }
}
