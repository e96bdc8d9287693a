/**
 * One server at an endpoint of several: its name and prefix, whether readiness waits for it, its
 * connector (its own era, children and failures), what its last initialize answered, and what the
 * last sign of it said (up, or down and why) for /healthz.
 */
import type { Logger } from 'pino';
import { ProxyError, type ProxyErrorCode } from '../../jsonrpc/errors.js';
import type { ServerOutcome } from '../../ops/metrics.js';
import type { McpResult } from '../../transformers/contract.js';
import { clientSession } from '../client-session.js';
import type { UpstreamConnector } from '../connector.js';
import { ToolCatalog, toolLister } from '../tool-catalog.js';
import type { UpstreamConnection, UpstreamEvents } from '../types.js';
import type { NamedServer } from './names.js';

export interface AggregateServerOptions {
  name: string;
  prefix: string;
  required: boolean;
  /** Masked, for logs and /healthz. */
  target: string;
  requestTimeoutMs: number;
  inputTimeoutMs: number;
  /** The `_meta` of the proxy's own listing of a 2026-07-28 server's tools. */
  modernMeta: Record<string, unknown>;
  /** The server's connector; `witness` hears every sign of whether it is usable. */
  connector(witness: (usable: boolean, cause?: string) => void): UpstreamConnector;
  /** Told when the server is found usable or not. */
  changed(): void;
  /** Counts one request sent to it, by how it ended. */
  count(method: string, outcome: ServerOutcome): void;
}

/** A session at the endpoint is nobody's in particular on a server: the client's principal stays at the endpoint. */
const NOBODY = { principal: '', clientKey: '' };

export class AggregateServer implements NamedServer {
  readonly connector: UpstreamConnector;
  /** Its initialize result as last seen (any session's, or a probe's): what the endpoint's initialize merges. */
  known: McpResult | undefined;
  /** The last sign: usable or not (why), and when. */
  private state: { usable: boolean; cause?: string; at: number } | undefined;
  private readonly tools: ToolCatalog;

  constructor(private readonly o: AggregateServerOptions) {
    this.connector = o.connector((usable, cause) => this.witness(usable, cause));
    this.tools = new ToolCatalog({ lister: async () => toolLister(this.connector.modern, o.requestTimeoutMs, { meta: o.modernMeta }) });
  }

  get name(): string {
    return this.o.name;
  }
  get prefix(): string {
    return this.o.prefix;
  }
  get required(): boolean {
    return this.o.required;
  }
  /** Whether the last sign said it cannot be used. */
  get down(): string | undefined {
    return this.state && !this.state.usable ? (this.state.cause ?? 'not usable') : undefined;
  }

  /** A session of this server for one client session, in the era the server speaks. */
  open(events: UpstreamEvents, log: Logger): UpstreamConnection {
    const { connector, tools, o } = this;
    return clientSession(connector, events, {
      who: NOBODY,
      tools,
      requestTimeoutMs: o.requestTimeoutMs,
      inputTimeoutMs: o.inputTimeoutMs,
      legacy: (ev) => connector.connect(ev, log),
      log,
    });
  }

  counted(method: string, outcome: ServerOutcome): void {
    this.o.count(method, outcome);
  }

  /** Whether the last sign said it is usable; undefined: nothing said yet. */
  get up(): boolean | undefined {
    return this.state?.usable;
  }

  learned(result: McpResult): void {
    this.known = result;
  }

  /** A failure of this server, saying which it is. */
  failure(code: ProxyErrorCode, message: string): ProxyError {
    return new ProxyError(code, `Server "${this.o.name}" ${message}`);
  }

  probe(timeoutMs: number, log: Logger): Promise<void> {
    return this.connector
      .probe(timeoutMs, log.child({ server: this.o.name }), (result) => this.learned(result))
      .then(
        () => this.witness(true),
        (err: Error) => {
          this.witness(false, err.message);
          throw this.failure(err instanceof ProxyError ? err.code : 'UPSTREAM_UNREACHABLE', `is not usable: ${err.message}`);
        },
      );
  }

  report(): Record<string, unknown> {
    const { state } = this;
    return {
      name: this.o.name,
      prefix: this.o.prefix,
      required: this.o.required,
      status: state === undefined ? 'unknown' : state.usable ? 'up' : 'down',
      ...(state && !state.usable && state.cause ? { cause: state.cause } : {}),
      ...(state ? { checkedAt: new Date(state.at).toISOString() } : {}),
      ...this.connector.report(),
    };
  }

  private witness(usable: boolean, cause?: string): void {
    // Every message witnesses a usable server: only the time changes.
    if (usable && this.state?.usable) return void (this.state.at = Date.now());
    const was = this.state?.usable;
    this.state = { usable, ...(cause ? { cause } : {}), at: Date.now() };
    if (was !== usable) this.o.changed();
  }
}
