/**
 * A legacy session on an upstream whose era was not asked (stdio) or may have been misjudged:
 * the client's `initialize` goes to a legacy connection, and when the upstream refuses it as only
 * a 2026-07-28 server does (UnsupportedProtocolVersion), the session moves to the modern bridge
 * with that same `initialize`: the legacy connection is closed, and nothing it says afterwards
 * reaches the session.
 */
import { UNSUPPORTED_PROTOCOL_VERSION } from '../jsonrpc/errors.js';
import { isRequest, isResponse, type Frame } from '../jsonrpc/message.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export function withModernFallback(
  events: UpstreamEvents,
  connectLegacy: (events: UpstreamEvents) => UpstreamConnection,
  connectModern: (events: UpstreamEvents) => UpstreamConnection,
  refused: () => void,
): UpstreamConnection {
  /** The client's initialize, until the upstream answered it. */
  let initialize: Frame | undefined;
  let moved = false;
  const legacyEvents: UpstreamEvents = {
    onMessage(frame, relatedId) {
      if (moved) return;
      const msg = frame.msg;
      if (initialize && isResponse(msg) && msg.id === (initialize.msg as { id: unknown }).id) {
        const asked = initialize;
        initialize = undefined;
        if (msg.error?.code === UNSUPPORTED_PROTOCOL_VERSION) {
          moved = true;
          refused();
          void legacy.close();
          inner = connectModern(events);
          return inner.send(asked);
        }
      }
      events.onMessage(frame, relatedId);
    },
    onFailure(id, err) {
      if (!moved) events.onFailure(id, err);
    },
    onClose(err) {
      if (!moved) events.onClose(err);
    },
  };
  const legacy = connectLegacy(legacyEvents);
  let inner = legacy;
  return {
    send(frame) {
      if (!moved && isRequest(frame.msg) && frame.msg.method === 'initialize') initialize = frame;
      inner.send(frame);
    },
    close: () => inner.close(),
    detach: legacy.detach && (() => (inner.detach ? inner.detach() : void inner.close())),
    session: () => inner.session?.() ?? {},
    listen: (on) => inner.listen?.(on),
  };
}
