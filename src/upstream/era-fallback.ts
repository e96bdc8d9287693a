/**
 * A legacy session on an upstream whose era was not asked (stdio) or may have been misjudged:
 * the client's `initialize` goes to a legacy connection, and when the upstream refuses it as only
 * a 2026-07-28 server does (UnsupportedProtocolVersion), the session moves to the modern bridge
 * with that same `initialize`: the legacy connection is closed, and nothing it says afterwards
 * reaches the session. What the client sends before its `initialize` is answered waits for that
 * answer, then goes to whichever connection serves the session.
 */
import { isRequest, isResponse, type Frame, type JsonRpcErrorObject } from '../jsonrpc/message.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export function withModernFallback(
  events: UpstreamEvents,
  connectLegacy: (events: UpstreamEvents) => UpstreamConnection,
  connectModern: (events: UpstreamEvents) => UpstreamConnection,
  /** Whether the upstream's error to `initialize` moves the session (UpstreamEra.tookRefusal). */
  refused: (error: JsonRpcErrorObject) => boolean,
): UpstreamConnection {
  /** The client's initialize, until the upstream answered it; what the client sent meanwhile waits for that answer. */
  let initialize: Frame | undefined;
  const held: Frame[] = [];
  let moved = false;
  let closed = false;
  const legacyEvents: UpstreamEvents = {
    onMessage(frame, relatedId) {
      if (moved || closed) return;
      const msg = frame.msg;
      if (initialize && isResponse(msg) && msg.id === (initialize.msg as { id: unknown }).id) {
        const asked = initialize;
        initialize = undefined;
        if (msg.error && refused(msg.error)) {
          moved = true;
          void legacy.close();
          inner = connectModern(events);
          inner.send(asked);
        } else events.onMessage(frame, relatedId);
        for (const later of held.splice(0)) inner.send(later);
        return;
      }
      events.onMessage(frame, relatedId);
    },
    onFailure(id, err) {
      if (moved) return;
      events.onFailure(id, err);
      if (initialize && id === (initialize.msg as { id: unknown }).id) {
        initialize = undefined; // no answer came: what waited goes on as before
        for (const later of held.splice(0)) inner.send(later);
      }
    },
    onClose(err) {
      held.length = 0;
      if (!moved) events.onClose(err);
    },
  };
  const legacy = connectLegacy(legacyEvents);
  let inner = legacy;
  return {
    send(frame) {
      if (moved) return inner.send(frame);
      if (initialize) return void held.push(frame);
      if (isRequest(frame.msg) && frame.msg.method === 'initialize') initialize = frame;
      inner.send(frame);
    },
    close: () => {
      closed = true;
      return inner.close();
    },
    detach: legacy.detach && (() => (inner.detach ? inner.detach() : void inner.close())),
    session: () => inner.session?.() ?? {},
    listen: (on) => inner.listen?.(on),
  };
}
