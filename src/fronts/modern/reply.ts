/** Where a modern request's answer and notifications go, and how it is cancelled: the same for every front. */
import type { Frame, JsonRpcNotification } from '../../jsonrpc/message.js';

/** The HTTP status an answer goes with, when not 200 (a limit's or a drain's refusal, an upstream's rejection), and its Retry-After. */
export interface Refusal {
  readonly httpStatus: number;
  readonly retryAfter?: number;
}

/** Where a modern request's answer and its notifications go (an HTTP reply, stdout). */
export interface ModernReply {
  /** A notification about this request (progress, a log message the request asked for). */
  notify(n: JsonRpcNotification): void;
  /** The answer (a response, with its bytes when they are ready); `refusal`: its HTTP status and Retry-After, when it is a refusal. */
  answer(frame: Frame, refusal?: Refusal): void;
  /** Fires when the client is gone or cancelled the request. */
  cancellation: Cancellation;
}

/** A one-shot cancellation signal; an AbortController per request would cost more than the rest of it. */
export class Cancellation {
  cancelled = false;
  private listeners: Array<() => void> | undefined;

  onCancel(fn: () => void): void {
    if (this.cancelled) fn();
    else (this.listeners ??= []).push(fn);
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    for (const fn of listeners) fn();
  }
}
