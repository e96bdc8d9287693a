/**
 * The text of a message for the upstream. Serializing can fail (a value nested too deep for the
 * stack); then nothing is sent, and a request gets its failure through the connection's own
 * events, so a send never throws into its caller and no call is left waiting.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import { isRequest, serialize, type Frame, type Wire } from '../jsonrpc/message.js';
import type { UpstreamEvents } from './types.js';

export function encodeForUpstream(frame: Frame, events: UpstreamEvents, log: Logger): Wire | undefined {
  try {
    return serialize(frame);
  } catch (err) {
    const msg = frame.msg;
    const why = (err as Error).message;
    log.warn(
      { err: why, method: 'method' in msg ? msg.method : undefined },
      'a message could not be serialized for the upstream; not sent',
    );
    if (isRequest(msg)) {
      const failure = new ProxyError('BAD_REQUEST', `The request could not be sent to the upstream: ${why}`);
      queueMicrotask(() => events.onFailure(msg.id, failure));
    }
    return undefined;
  }
}
