/**
 * The stdio front: the proxy is the client's child process and speaks newline-delimited
 * JSON-RPC on stdin/stdout (stdout carries nothing else; logs go to stderr). One client, one
 * relay session; it ends when stdin closes or the upstream goes away.
 */
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import { parsePayload, serialize } from '../jsonrpc/message.js';
import { lineSplitter } from '../upstream/lines.js';
import type { ClientSink, RelaySession } from '../relay/session.js';

export interface StdioDownstreamOptions {
  input: Readable;
  output: Writable;
  openSession(sink: ClientSink, log: Logger): RelaySession;
  log: Logger;
}

export interface StdioDownstream {
  /** Settles with the reason once the session is over. */
  done: Promise<ProxyError>;
  close(): Promise<void>;
}

export function startStdioDownstream(opts: StdioDownstreamOptions): StdioDownstream {
  const { input, output, log } = opts;
  let finished!: (reason: ProxyError) => void;
  const done = new Promise<ProxyError>((resolve) => (finished = resolve));
  const write = (text: string) => {
    if (output.writable) output.write(text + '\n');
  };
  const relay = opts.openSession(
    {
      deliver: (frame) => write(serialize(frame)),
      end: (reason) => finished(reason),
    },
    log,
  );
  const onData = lineSplitter((line) => {
    const parsed = parsePayload(line);
    if (!parsed.ok) {
      log.warn({ line: line.slice(0, 200) }, 'client sent an invalid message');
      return write(JSON.stringify(parsed.error));
    }
    for (const frame of parsed.frames) relay.fromClient(frame);
  });
  input.on('data', onData);
  input.once('end', () => void relay.close(new ProxyError('CLIENT_GONE', 'The client closed stdin')));
  output.on('error', (err) => {
    log.warn({ err: err.message }, 'stdout is gone; ending the session');
    void relay.close(new ProxyError('CLIENT_GONE', 'The client stopped reading'));
  });
  return {
    done,
    async close() {
      input.off('data', onData);
      input.destroy(); // an open stdin would keep the process alive
      await relay.close(new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down'));
    },
  };
}
