/** Where a modern request's answer and notifications go, and how it is cancelled: the same for every front. */
import type { Frame, JsonRpcNotification } from '../../jsonrpc/message.js';
import type { CallSignal } from '../../upstream/call-abort.js';

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
  /** Aborted when the client is gone or cancelled the request. */
  cancellation: CallSignal;
}
