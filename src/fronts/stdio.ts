/**
 * The stdio front: the proxy is the client's child process and speaks newline-delimited
 * JSON-RPC on stdin/stdout (stdout carries nothing else; logs go to stderr). Each message is
 * routed to an era first: a request with modern `_meta` is served statelessly by the modern
 * handler; anything else belongs to the one legacy relay session, started by the first such
 * message. The front ends when stdin closes or the legacy session's upstream goes away.
 */
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { ModernHandler } from './modern/handler.js';
import { CallAbort } from '../upstream/call-abort.js';
import { ProxyError, toJsonRpcError } from '../jsonrpc/errors.js';
import {
  errorResponse,
  type ClientPayloadLimits,
  isRequest,
  parsePayload,
  serialize,
  type Frame,
  type JsonRpcId,
  type JsonRpcRequest,
  type Wire,
} from '../jsonrpc/message.js';
import { cancelledOf } from '../mcp/cancel-progress.js';
import { eraOf } from '../mcp/eras.js';
import { lineSplitter } from '../jsonrpc/lines.js';
import type { ClientSink, RelaySession } from '../core/relay.js';
import type { Requester } from '../core/context.js';

/** The one client of the stdio front: no authentication, no address. */
const STDIO_CLIENT: Requester = { principal: '', client: 'stdio' };

const NEWLINE = Buffer.from('\n');
export interface StdioDownstreamOptions {
  input: Readable;
  output: Writable;
  openSession(sink: ClientSink, log: Logger, who: Requester): RelaySession;
  /** Serves modern (2026-07-28) requests; absent = legacy clients only. */
  modern?: ModernHandler;
  /** Most messages in one batch line, deepest nesting in one message. */
  limits: ClientPayloadLimits;
  log: Logger;
}

export interface StdioDownstream {
  /** Settles with the reason once the session is over. */
  done: Promise<ProxyError>;
  close(): Promise<void>;
}

export function startStdioDownstream(opts: StdioDownstreamOptions): StdioDownstream {
  const { input, output, log, modern } = opts;
  let finished!: (reason: ProxyError) => void;
  const done = new Promise<ProxyError>((resolve) => (finished = resolve));
  const write = (text: Wire) => {
    if (output.writable) output.write(typeof text === 'string' ? text + '\n' : Buffer.concat([text, NEWLINE]));
  };
  let relay: RelaySession | undefined;
  const legacy = () =>
    (relay ??= opts.openSession(
      {
        deliver: (frame) => write(serialize(frame)),
        end: (reason) => finished(reason),
      },
      log,
      STDIO_CLIENT,
    ));
  // Without the modern era there is nothing to wait for: start the upstream at once, as a relay does.
  if (!modern) legacy();
  /** Modern requests in flight, by the client's id: `notifications/cancelled` aborts them. */
  const inFlight = new Map<JsonRpcId, CallAbort>();

  const route = (frame: Frame) => {
    const msg = frame.msg;
    const cancelled = cancelledOf(msg);
    if (cancelled) {
      const cancellation = inFlight.get(cancelled.requestId as JsonRpcId);
      if (cancellation) return cancellation.abort(); // the modern request's answer is never written
    }
    // Each line's messages are classified one by one: a stdio client has no session id or headers.
    if (modern && eraOf([frame]) === 'modern') return isRequest(msg) ? serveModern(modern, msg, write, inFlight) : undefined;
    legacy().fromClient(frame);
  };

  const onData = lineSplitter((line) => {
    const parsed = parsePayload(line, opts.limits);
    if (!parsed.ok) {
      log.warn({ line: line.slice(0, 200) }, 'client sent an invalid message');
      return write(JSON.stringify(parsed.error));
    }
    for (const frame of parsed.frames) route(frame);
  });
  const end = (reason: ProxyError) => {
    for (const cancellation of inFlight.values()) cancellation.abort();
    if (relay) void relay.close(reason);
    else finished(reason);
  };
  input.on('data', onData);
  input.once('end', () => end(new ProxyError('CLIENT_GONE', 'The client closed stdin')));
  output.on('error', (err) => {
    log.warn({ err: err.message }, 'stdout is gone; ending the session');
    end(new ProxyError('CLIENT_GONE', 'The client stopped reading'));
  });
  return {
    done,
    async close() {
      input.off('data', onData);
      input.destroy(); // an open stdin would keep the process alive
      const reason = new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down');
      for (const cancellation of inFlight.values()) cancellation.abort();
      if (relay) await relay.close(reason);
      else finished(reason);
    },
  };
}

/** One modern request from the stdio client: its notifications and answer written as lines, unless it was cancelled. */
function serveModern(handler: ModernHandler, req: JsonRpcRequest, write: (text: Wire) => void, inFlight: Map<JsonRpcId, CallAbort>): void {
  let ctx;
  try {
    ctx = handler.requestContext(req, STDIO_CLIENT);
  } catch (err) {
    return write(JSON.stringify(errorResponse(req.id, toJsonRpcError(err, 'modern'))));
  }
  const cancellation = new CallAbort();
  inFlight.set(req.id, cancellation);
  void handler.handle(req, ctx, {
    cancellation,
    notify: (n) => {
      if (!cancellation.aborted) write(JSON.stringify(n));
    },
    answer: (frame) => {
      inFlight.delete(req.id);
      if (!cancellation.aborted) write(serialize(frame));
    },
  });
}
