/**
 * Several servers behind one endpoint, as one upstream to the rest of the proxy: a legacy server
 * whose sessions (aggregate/session.ts) open a session on each server they use. Each server has
 * its own connector (its era found on its own, its children, its failures); the endpoint is
 * usable while every required server is, and /healthz shows each.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../../jsonrpc/errors.js';
import type { ModernBridgeOptions } from '../modern-bridge.js';
import type { UpstreamEndpoint } from '../connector.js';
import { UpstreamEra } from '../era.js';
import type { ModernUpstream } from '../modern-http.js';
import type { UpstreamConnection, UpstreamEvents } from '../types.js';
import { ServerNames } from './names.js';
import { AggregateSession, MERGE_WAIT_MS } from './session.js';
import type { AggregateServer } from './server.js';

const SPOKEN_AS_LEGACY = 'several servers behind one endpoint are served as one legacy server';

export class AggregateEndpoint implements UpstreamEndpoint {
  readonly names: ServerNames<AggregateServer>;
  /** The endpoint speaks the legacy era: modern clients are served through its pooled sessions, each server in its own era beneath. */
  readonly era: UpstreamEra;
  readonly modern: ModernUpstream = {
    call: () => Promise.reject(new ProxyError('UPSTREAM_PROTOCOL', SPOKEN_AS_LEGACY)),
    mirrorsHeaders: false,
  };

  constructor(
    servers: AggregateServer[],
    separator: string,
    private readonly o: { initializeTimeoutMs: number; log: Logger },
  ) {
    this.names = new ServerNames(servers, separator);
    const never = () => Promise.reject(new Error(SPOKEN_AS_LEGACY));
    this.era = new UpstreamEra({ setting: 'legacy', discover: never, takesInitialize: never, askFirst: false, log: o.log });
  }

  get servers(): readonly AggregateServer[] {
    return this.names.servers;
  }

  /** stdio when any server runs as a child: sessions then hold processes of this replica's own. */
  get kind(): 'stdio' | 'http' {
    return this.servers.some((s) => s.connector.kind === 'stdio') ? 'stdio' : 'http';
  }

  get children(): { size: number } {
    return { size: this.servers.reduce((n, s) => n + s.connector.children.size, 0) };
  }

  /** `clientSession`: a legacy client's session, which opens each server when it first uses it (a pooled one opens all at once). */
  connect(events: UpstreamEvents, log: Logger, clientSession?: object): UpstreamConnection {
    const { initializeTimeoutMs } = this.o;
    // Well within the client's own initialize, which waits for what is merged.
    const mergeWaitMs = Math.min(MERGE_WAIT_MS, Math.floor(initializeTimeoutMs / 2));
    return new AggregateSession(events, { names: this.names, initializeTimeoutMs, mergeWaitMs, eager: clientSession === undefined, log });
  }

  bridge(_events: UpstreamEvents, _o: Omit<ModernBridgeOptions, 'upstream' | 'server'>): UpstreamConnection {
    throw new ProxyError('UPSTREAM_PROTOCOL', SPOKEN_AS_LEGACY);
  }

  /** Every server probed; rejects naming the required ones that cannot be used. */
  async probe(timeoutMs: number, log: Logger): Promise<void> {
    const outcomes = await Promise.allSettled(this.servers.map((s) => s.probe(timeoutMs, log)));
    const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' && this.servers[i].required ? [o.reason as ProxyError] : []));
    if (failed.length > 0) throw new ProxyError(failed[0].code, failed.map((err) => err.message).join('; '));
  }

  /** The server a request names (a tool or prompt by its prefix, a resource by who listed it), for logs. */
  serverOf(method: string, target: string): string | undefined {
    if (method === 'tools/call' || method === 'prompts/get') return this.names.inner(target)?.server.name;
    if (method.startsWith('resources/')) return this.names.ownerOf(target, true)?.name;
    return undefined;
  }

  serverStatus(): Array<{ name: string; up: boolean | undefined }> {
    return this.servers.map((s) => ({ name: s.name, up: s.up }));
  }

  /** Why the endpoint cannot be used now (a required server is down), or undefined. */
  downRequired(): string | undefined {
    const down = this.servers.filter((s) => s.required && s.down).map((s) => `server "${s.name}": ${s.down}`);
    return down.length > 0 ? down.join('; ') : undefined;
  }

  report(): Record<string, unknown> {
    return { kind: 'several', servers: this.servers.map((s) => s.report()) };
  }

  killChildrenNow(): void {
    for (const s of this.servers) s.connector.killChildrenNow();
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.connector.close()));
  }
}
