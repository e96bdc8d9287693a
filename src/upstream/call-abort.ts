/**
 * How a call is cancelled inside the proxy, for the price of an EventEmitter: in Node 20 an
 * AbortController costs about 10 µs before anyone listens, and a listener on its signal several
 * more, on every call. CallAbort is read wherever a signal is (`aborted`, `reason`, an `abort`
 * listener); an AbortSignal is a CallSignal too, so callers that hold one pass it as it is. A
 * modern request is cancelled through one too (the client left, or cancelled it).
 */
import { EventEmitter } from 'node:events';

/** What waits on a call's cancellation reads: whether it happened, why, and an `abort` listener (called once). */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Runs `fn` once the call is cancelled: at once when it already is (a listener added later is never called otherwise). */
export function onAbort(signal: CallSignal, fn: () => void): void {
  if (signal.aborted) fn();
  else signal.addEventListener('abort', fn, { once: true });
}

export class CallAbort extends EventEmitter implements CallSignal {
  aborted = false;
  reason: unknown = undefined;

  /** Cancels the call (once): each listener runs once; those added after are never called, as with an AbortSignal. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
    this.removeAllListeners('abort');
  }

  /** Adds a listener, called once (as with `{ once: true }`, which is how every caller adds one). */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    this.once('abort', listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    this.off('abort', listener);
  }
}
