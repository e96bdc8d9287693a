/**
 * The two notifications that follow a call, read and written in one place. A
 * `notifications/cancelled` names the request it gives up on by the sender's id; progress names
 * its call by the token the request carried in `_meta.progressToken`. Whoever relays a call
 * under ids or tokens of its own renames them with these functions and looks them up among its
 * own (an id or token of another type names nothing there).
 */
import { isNotification, type JsonRpcId, type JsonRpcMessage, type JsonRpcNotification } from '../jsonrpc/message.js';

export const CANCELLED = 'notifications/cancelled';
export const PROGRESS = 'notifications/progress';

export type ProgressToken = string | number;

/** What a cancelled notification says: the request given up on (undefined when it names none) and why. */
export interface Cancelled {
  requestId?: JsonRpcId;
  reason?: string;
}

/** A `notifications/cancelled` message's request and reason; undefined for any other message. */
export function cancelledOf(msg: JsonRpcMessage): Cancelled | undefined {
  if (!isNotification(msg) || msg.method !== CANCELLED) return undefined;
  const { requestId, reason } = msg.params ?? {};
  return {
    requestId: typeof requestId === 'string' || typeof requestId === 'number' ? requestId : undefined,
    reason: reason === undefined || reason === null ? undefined : String(reason),
  };
}

/** The notification that gives up on request `requestId` (in the receiver's ids). */
export function cancelledNotification(requestId: JsonRpcId, reason: string): JsonRpcNotification {
  return { jsonrpc: '2.0', method: CANCELLED, params: { requestId, reason } };
}

/** Whether `v` may name a call's progress: a string or an integer, as the schema's ProgressToken. */
export function isProgressToken(v: unknown): v is ProgressToken {
  return typeof v === 'string' || Number.isInteger(v);
}

/**
 * Why a request's progress token is invalid (an object, a fraction, a boolean: no progress could
 * ever be matched to it, and the official SDKs drop such a request unanswered); undefined when it
 * has a valid one or none.
 */
export function invalidProgressToken(params: Record<string, unknown> | undefined): string | undefined {
  const token = (params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
  if (token === undefined || isProgressToken(token)) return undefined;
  return (
    'Invalid params: _meta.progressToken must be a string or an integer, ' +
    `not ${JSON.stringify(token)?.slice(0, 40) ?? typeof token}; send one of those, or none`
  );
}

/** The token a request asks progress under, as it came (legacy relays keep a client's token as it is). */
export function requestProgressToken(params: Record<string, unknown> | undefined): ProgressToken | undefined {
  return (params?._meta as { progressToken?: ProgressToken } | undefined)?.progressToken;
}

/** A request's params asking progress under `token` instead (a token of the proxy's own upstream). */
export function withRequestProgressToken(params: Record<string, unknown> | undefined, token: ProgressToken): Record<string, unknown> {
  return { ...params, _meta: { ...(params?._meta as object), progressToken: token } };
}

/** The progress token a notification names. */
export function progressTokenOf(n: JsonRpcNotification): ProgressToken | undefined {
  return n.params?.progressToken as ProgressToken | undefined;
}

/** A notification naming `token` instead (the client's own, given back). */
export function withProgressToken(n: JsonRpcNotification, token: ProgressToken | undefined): JsonRpcNotification {
  return { ...n, params: { ...n.params, progressToken: token } };
}
