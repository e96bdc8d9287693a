/**
 * What a relay session needs from the server side: send frames, get frames and one final close.
 * Transports (stdio child, Streamable HTTP) implement it; framing lives in each transport.
 */
import type { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../jsonrpc/message.js';

export interface UpstreamEvents {
  /**
   * A message from the server. `relatedId` is the client request whose response stream carried
   * it, when the transport knows (HTTP); stdio never knows.
   */
  onMessage(frame: Frame, relatedId?: JsonRpcId): void;
  /**
   * The proxy could not get an answer to request `id` (unreachable, an HTTP error, a stream
   * that ended without one, a message it could not send): a typed failure, never wire JSON;
   * whoever waits turns it into its era's error (jsonrpc/errors.ts).
   */
  onFailure(id: JsonRpcId, err: ProxyError): void;
  /** The upstream session is gone for good (exit, crash, expiry); called at most once. */
  onClose(err: ProxyError): void;
  /**
   * Request `id` waits for the client (true: its time limit stops; false: it starts again), while
   * the connection puts the upstream's input rounds to the client itself (a modern upstream's input rounds).
   */
  onWaiting?(id: JsonRpcId, waiting: boolean): void;
}

export interface UpstreamConnection {
  /** Fire and forget: failures come back through onFailure (one request) or onClose (the session). */
  send(frame: Frame): void;
  /** Ends the upstream session and releases its process or connections. Idempotent. */
  close(): Promise<void>;
  /**
   * HTTP: lets go of the connections but leaves the upstream session alive, for another replica
   * (or this one, later) to go on with. Absent: the session cannot outlive this connection.
   */
  detach?(): void;
  /** HTTP: the upstream session this connection speaks for, once known. */
  session?(): { id?: string; protocolVersion?: string };
  /** HTTP: hold (true) or let go of (false) the upstream's GET stream, following the client's. */
  listen?(on: boolean): void;
}

/** An upstream HTTP session another replica started: go on with it, no initialize. */
export interface ResumedSession {
  id: string;
  protocolVersion?: string;
}

/** What every upstream spec has, whatever its transport. */
interface UpstreamLimits {
  /** Deepest nesting of arrays and objects in a message from the server; deeper ones are not messages (upstream.maxJsonDepth). */
  maxJsonDepth: number;
}

export interface StdioUpstreamSpec extends UpstreamLimits {
  kind: 'stdio';
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** Pass the proxy's whole environment; otherwise only a minimal set plus `env`. */
  inheritEnv?: boolean;
  cwd?: string;
}
export interface HttpUpstreamSpec extends UpstreamLimits {
  kind: 'http';
  url: string;
  headers: Record<string, string>;
}
export type UpstreamSpec = StdioUpstreamSpec | HttpUpstreamSpec;
