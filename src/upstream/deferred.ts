/**
 * An upstream connection whose kind is known only later (the upstream's era is still being
 * asked): what is sent meanwhile is queued and handed on, in order, once it exists.
 */
import type { Frame } from '../jsonrpc/message.js';
import type { UpstreamConnection } from './types.js';

export function deferredConnection(ready: Promise<() => UpstreamConnection>, fail: (err: unknown) => void): UpstreamConnection {
  let inner: UpstreamConnection | undefined;
  let closed = false;
  let listening: boolean | undefined;
  const queue: Frame[] = [];
  ready.then(
    (make) => {
      if (closed) return;
      try {
        inner = make();
        for (const frame of queue.splice(0)) inner.send(frame);
        if (listening !== undefined) inner.listen?.(listening);
      } catch (err) {
        fail(err); // no upstream for the session: it ends, and what it waited for is answered
      }
    },
    (err) => {
      if (!closed) fail(err);
    },
  );
  return {
    send: (frame) => (inner ? inner.send(frame) : void queue.push(frame)),
    close: () => {
      closed = true;
      return inner?.close() ?? Promise.resolve();
    },
    detach: () => {
      closed = true;
      if (inner?.detach) inner.detach();
      else void inner?.close();
    },
    session: () => inner?.session?.() ?? {},
    listen: (on) => (inner ? inner.listen?.(on) : void (listening = on)),
  };
}
