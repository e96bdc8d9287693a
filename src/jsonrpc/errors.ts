/**
 * The proxy's own failures: a typed error with a stable string code, and the one place that
 * turns any error into its wire form, per protocol era. An upstream's JSON-RPC error is data
 * and is relayed as it came to legacy clients; for modern clients `modernUpstreamError` only
 * renames the codes the 2026-07-28 revision forbids.
 */
import {
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  isObject,
  METHOD_NOT_FOUND,
  type JsonRpcErrorObject,
  type ParseOutcome,
} from './message.js';

/** -32000 and -32001 are the codes the official SDKs use for these two situations (legacy era). */
export const CONNECTION_CLOSED = -32000;
export const REQUEST_TIMEOUT = -32001;
/** Codes the 2026-07-28 revision defines in its reserved range -32020…-32099. */
export const HEADER_MISMATCH = -32020;
export const MISSING_CLIENT_CAPABILITY = -32021;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

export type ProxyErrorCode =
  | 'UPSTREAM_CLOSED'
  | 'UPSTREAM_START_FAILED'
  | 'UPSTREAM_SESSION_EXPIRED'
  | 'UPSTREAM_UNREACHABLE'
  | 'UPSTREAM_PROTOCOL'
  | 'UPSTREAM_BUSY'
  | 'REQUEST_TIMEOUT'
  | 'CLIENT_GONE'
  | 'SESSION_IDLE'
  | 'DUPLICATE_ID'
  | 'SHUTTING_DOWN'
  | 'TRANSFORM_FAILED'
  // Rejections at the HTTP front, before a message reaches a session.
  | 'BAD_REQUEST'
  | 'NOT_ACCEPTABLE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'FORBIDDEN'
  | 'UNAUTHORIZED'
  | 'AUTH_UNAVAILABLE'
  | 'BODY_TOO_LARGE'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_EXPIRED'
  | 'TOO_MANY_SESSIONS'
  | 'TOO_MANY_CONNECTIONS'
  | 'RATE_LIMITED'
  // A request the proxy answers itself with invalid params (server variants: unknown variant, name or cursor).
  | 'INVALID_PARAMS'
  // Modern-era rejections of a request (each has the code and HTTP status the revision names).
  | 'INVALID_META'
  | 'UNSUPPORTED_PROTOCOL_VERSION'
  | 'HEADER_MISMATCH'
  | 'MISSING_CLIENT_CAPABILITY'
  | 'METHOD_NOT_FOUND'
  | 'INVALID_REQUEST_STATE'
  | 'INPUT_TIMEOUT'
  // The tasks extension: a task id that names no task of this client; a client with too many tasks running;
  // a task that ran past modern.tasks.maxRunMs.
  | 'TASK_NOT_FOUND'
  | 'TOO_MANY_TASKS'
  | 'TASK_TIMEOUT'
  // What the proxy held for an absent client (a task's result, a call waiting for its input) was let go (listen.heldBytes).
  | 'HELD_BYTES_EXCEEDED'
  // A call to a tool whose definition changed since it was pinned, refused until the operator accepts it (upstream.toolChanges: refuse).
  | 'TOOL_CHANGED';

interface WireForm {
  legacy: number;
  /** Modern clients never see the legacy range -32000…-32019 from the proxy. */
  modern: number;
  /** HTTP status when the error rejects a modern request before it reaches the upstream. */
  status: number;
  /** An error whose `data` a specification fixes (SEP-2053's variant errors): no `data.code` added. */
  specified?: boolean;
  /** A refusal worth retrying: the `Retry-After` seconds that go with its HTTP status. */
  retryAfter?: number;
}

/** The same wire form for several codes. */
const each = <C extends ProxyErrorCode>(form: WireForm, ...codes: C[]) =>
  Object.fromEntries(codes.map((c) => [c, form])) as Record<C, WireForm>;
/**
 * No answer could be had (the upstream, the client, or the proxy itself): -32000 for legacy clients as the SDKs
 * use it, -32603 for modern ones.
 */
const noAnswer = (status = 200, retryAfter?: number): WireForm => ({
  legacy: CONNECTION_CLOSED,
  modern: INTERNAL_ERROR,
  status,
  ...(retryAfter ? { retryAfter } : {}),
});
const sameCode = (code: number, status: number): WireForm => ({ legacy: code, modern: code, status });

// Typed as every code's form: a code without its wire form does not compile.
const WIRE: Record<ProxyErrorCode, WireForm> = {
  ...each(
    noAnswer(),
    'UPSTREAM_CLOSED',
    'UPSTREAM_START_FAILED',
    'UPSTREAM_SESSION_EXPIRED',
    'UPSTREAM_UNREACHABLE',
    'CLIENT_GONE',
    'SESSION_IDLE',
    'HELD_BYTES_EXCEEDED',
  ),
  ...each(noAnswer(503, 5), 'SHUTTING_DOWN', 'AUTH_UNAVAILABLE', 'TOO_MANY_SESSIONS', 'TOO_MANY_CONNECTIONS'),
  UPSTREAM_BUSY: noAnswer(503, 2),
  RATE_LIMITED: noAnswer(429, 1),
  TOO_MANY_TASKS: noAnswer(429, 5),
  ...each(sameCode(INTERNAL_ERROR, 200), 'UPSTREAM_PROTOCOL', 'TRANSFORM_FAILED'),
  ...each(sameCode(INVALID_REQUEST, 400), 'DUPLICATE_ID', 'BAD_REQUEST'),
  NOT_ACCEPTABLE: sameCode(INVALID_REQUEST, 406),
  UNSUPPORTED_MEDIA_TYPE: sameCode(INVALID_REQUEST, 415),
  BODY_TOO_LARGE: sameCode(INVALID_REQUEST, 413),
  FORBIDDEN: sameCode(INVALID_REQUEST, 403),
  UNAUTHORIZED: sameCode(INVALID_REQUEST, 401),
  // -32001: what the SDKs answer for an unknown session.
  ...each({ legacy: REQUEST_TIMEOUT, modern: INVALID_REQUEST, status: 404 }, 'SESSION_NOT_FOUND', 'SESSION_EXPIRED'),
  ...each({ legacy: REQUEST_TIMEOUT, modern: INTERNAL_ERROR, status: 200 }, 'REQUEST_TIMEOUT', 'INPUT_TIMEOUT', 'TASK_TIMEOUT'),
  INVALID_PARAMS: { ...sameCode(INVALID_PARAMS, 400), specified: true },
  ...each(sameCode(INVALID_PARAMS, 400), 'INVALID_META', 'INVALID_REQUEST_STATE', 'TASK_NOT_FOUND'),
  TOOL_CHANGED: sameCode(INVALID_PARAMS, 200),
  UNSUPPORTED_PROTOCOL_VERSION: { legacy: INVALID_REQUEST, modern: UNSUPPORTED_PROTOCOL_VERSION, status: 400 },
  HEADER_MISMATCH: { legacy: INVALID_REQUEST, modern: HEADER_MISMATCH, status: 400 },
  MISSING_CLIENT_CAPABILITY: { legacy: INVALID_REQUEST, modern: MISSING_CLIENT_CAPABILITY, status: 400 },
  METHOD_NOT_FOUND: sameCode(METHOD_NOT_FOUND, 404),
};

/** Every code the proxy's own errors may carry (the README lists each with its meaning). */
export const PROXY_ERROR_CODES = Object.keys(WIRE) as ProxyErrorCode[];

/** A failure of the proxy itself; `details` become fields of `data` (the revision's `supported`, `requested`, …). */
export class ProxyError extends Error {
  constructor(
    readonly code: ProxyErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ProxyError';
  }

  /** The HTTP status when this error rejects a request before it reaches a session or the upstream. */
  get httpStatus(): number {
    return WIRE[this.code].status;
  }

  /** For a refusal worth retrying (a limit, a drain): the `Retry-After` seconds. */
  get retryAfter(): number | undefined {
    return WIRE[this.code].retryAfter;
  }
}

/** The failure of the request an upstream's unusable payload answered (parseUpstream's `answerTo`). */
export function unusableAnswer(parsed: ParseOutcome & { ok: false }): ProxyError {
  return new ProxyError('UPSTREAM_PROTOCOL', parsed.error.error?.message ?? "The upstream's answer could not be read");
}

/**
 * The wire form of any error; `data.code` carries the stable string code for proxy errors. `era` is
 * mcp/era.ts's `Era`, spelled out here because the JSON-RPC layer imports nothing above it.
 */
export function toJsonRpcError(err: unknown, era: 'legacy' | 'modern' = 'legacy'): JsonRpcErrorObject {
  if (err instanceof ProxyError) {
    const wire = WIRE[err.code];
    if (wire.specified)
      return err.details ? { code: wire[era], message: err.message, data: err.details } : { code: wire[era], message: err.message };
    return { code: wire[era], message: err.message, data: { code: err.code, ...err.details } };
  }
  return { code: INTERNAL_ERROR, message: `Internal proxy error: ${(err as Error)?.message ?? String(err)}` };
}

const RESOURCE_NOT_FOUND = -32002;
/** The legacy URLElicitationRequiredError (2025-11-25); the 2026-07-28 revision reserves it. */
export const URL_ELICITATION_REQUIRED = -32042;
const DEFINED_MODERN = new Set([HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION]);

/**
 * An upstream (legacy) error as a modern client may receive it: -32002 becomes -32602 (the
 * revision's code for an unknown resource), -32042 and codes the revision reserves but does not
 * define become -32603; the original code stays in `data.upstreamCode`. Others pass unchanged.
 */
export function modernUpstreamError(error: JsonRpcErrorObject): JsonRpcErrorObject {
  const code = error.code;
  const reserved = code <= -32020 && code >= -32099 && !DEFINED_MODERN.has(code);
  if (code !== RESOURCE_NOT_FOUND && code !== URL_ELICITATION_REQUIRED && !reserved) return error;
  const data = isObject(error.data) ? error.data : error.data === undefined ? {} : { value: error.data };
  return {
    code: code === RESOURCE_NOT_FOUND ? INVALID_PARAMS : INTERNAL_ERROR,
    message: error.message,
    data: { ...data, upstreamCode: code },
  };
}

/**
 * What stops the proxy before it serves and is the user's to fix (the CLI prints each problem
 * and exits 2): bad usage, a config or rule set that does not validate (each problem with its
 * file:line:col and key when known), an upstream that fails its start-up check with --fail-fast.
 */
export class UserError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = new.target.name;
  }
}

/** The command line is wrong. */
export class UsageError extends UserError {
  constructor(message: string) {
    super([message]);
  }
}

/**
 * The config does not validate; `raw`: the config as read, when only its validation failed (so other checks can
 * still run on parts of it).
 */
export class ConfigError extends UserError {
  constructor(
    problems: string[],
    readonly raw?: Record<string, unknown>,
  ) {
    super(problems);
  }
}

/** A rule or plugin does not validate. */
export class RuleError extends UserError {}

/** The gateway cannot start as configured; the message says why and what to do. */
export class ProxyStartError extends UserError {
  constructor(message: string) {
    super([message]);
  }
}
