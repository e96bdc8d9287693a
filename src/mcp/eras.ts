/**
 * The protocol eras: the versions of each, the one classifier that tells which era a message
 * belongs to (for both fronts), and a modern request's context read from `params._meta`
 * (version, capabilities, log level). Nothing modern is taken from earlier requests or from
 * the connection: every request stands alone.
 */
import { ProxyError } from '../jsonrpc/errors.js';
import { invalidProgressToken, type ProgressToken } from './cancel-progress.js';
import type { Era } from './era.js';
import type { RequestEnvelope } from './request-context.js';
import { isObject, type JsonRpcRequest } from '../jsonrpc/message.js';

export const MODERN_VERSIONS = ['2026-07-28'];
export const LEGACY_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
/** What an UnsupportedProtocolVersion error lists: legacy versions are reached through initialize. */
export const SUPPORTED_VERSIONS = [...MODERN_VERSIONS, '2025-11-25'];

export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The requests a modern client may send (2026-07-28 ClientRequest). */
export const MODERN_METHODS = new Set([
  'server/discover',
  'subscriptions/listen',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  // The tasks extension (io.modelcontextprotocol/tasks).
  'tasks/get',
  'tasks/update',
  'tasks/cancel',
]);

/** The only methods whose results may be `input_required`. */
export const INPUT_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Results that carry `ttlMs` and `cacheScope`. */
export const CACHEABLE_METHODS = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * Whether a notification reaches a client that set `level` (an index into LOG_LEVELS; undefined: no log
 * messages): anything but a log message does.
 */
export function passesLogLevel(n: { method: string; params?: Record<string, unknown> }, level: number | undefined): boolean {
  return n.method !== 'notifications/message' || (level !== undefined && LOG_LEVELS.indexOf(String(n.params?.level)) >= level);
}

/** Does this message's `_meta` say it is a modern request? (Cheap: one property lookup.) */
function isModernMessage(msg: { params?: Record<string, unknown> }): boolean {
  const meta = msg.params?._meta;
  return typeof meta === 'object' && meta !== null && META.protocolVersion in meta;
}

/** What the transport says beside the messages (HTTP headers; nothing over stdio). */
export interface EraHints {
  sessionId?: string | string[];
  versionHeader?: string | string[];
}

/**
 * The one era classifier, for every front. Legacy with a session id. A modern version header
 * says modern, even for `initialize` (which the modern era does not have: it is refused there).
 * Otherwise `initialize` is legacy (a legacy client sends no version header with it), and a lone
 * message with the modern `_meta` is modern. Anything else is legacy.
 */
export function eraOf(frames: ReadonlyArray<{ msg: unknown }>, hints: EraHints = {}): Era {
  if (hints.sessionId !== undefined) return 'legacy';
  const version = hints.versionHeader;
  if (typeof version === 'string' && version !== '' && !LEGACY_VERSIONS.includes(version)) return 'modern';
  const msg = frames[0]?.msg as { method?: unknown; params?: Record<string, unknown> } | undefined;
  return frames.length === 1 && msg !== undefined && typeof msg.method === 'string' && msg.method !== 'initialize' && isModernMessage(msg)
    ? 'modern'
    : 'legacy';
}

/** The protocol's own `_meta` keys of a modern request (what the proxy sends when it speaks for a client, or for itself). */
export function modernEnvelope(capabilities: Record<string, unknown>, clientInfo?: unknown, logLevel?: string): Record<string, unknown> {
  return {
    [META.protocolVersion]: MODERN_VERSIONS[0],
    [META.clientCapabilities]: capabilities,
    ...(clientInfo !== undefined ? { [META.clientInfo]: clientInfo } : {}),
    ...(logLevel ? { [META.logLevel]: logLevel } : {}),
  };
}

/** Reads the request's `_meta`; throws the modern rejection when a required field is missing or bad. */
export function readModernMeta(req: JsonRpcRequest): RequestEnvelope {
  const meta = req.params?._meta;
  if (!isObject(meta)) {
    throw new ProxyError(
      'INVALID_META',
      `Invalid params: ${req.method} needs params._meta with "${META.protocolVersion}" and "${META.clientCapabilities}"`,
    );
  }
  const m: Record<string, unknown> = meta;
  const version = m[META.protocolVersion];
  if (typeof version !== 'string' || version === '') {
    throw new ProxyError('INVALID_META', `Invalid params: _meta["${META.protocolVersion}"] must be a protocol version string`);
  }
  if (!MODERN_VERSIONS.includes(version)) {
    throw new ProxyError('UNSUPPORTED_PROTOCOL_VERSION', 'Unsupported protocol version', {
      supported: SUPPORTED_VERSIONS,
      requested: version,
    });
  }
  const capabilities = m[META.clientCapabilities];
  if (!isObject(capabilities)) {
    throw new ProxyError('INVALID_META', `Invalid params: _meta["${META.clientCapabilities}"] must be an object ({} declares none)`);
  }
  let logLevel: number | undefined;
  if (m[META.logLevel] !== undefined) {
    logLevel = LOG_LEVELS.indexOf(m[META.logLevel] as string);
    if (logLevel < 0)
      throw new ProxyError('INVALID_META', `Invalid params: _meta["${META.logLevel}"] must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const badToken = invalidProgressToken(req.params);
  if (badToken) throw new ProxyError('INVALID_META', badToken);
  const progressToken = m.progressToken as ProgressToken | undefined;
  let passMeta: Record<string, unknown> | undefined;
  for (const key in m) {
    if (key.startsWith('io.modelcontextprotocol/') || key === 'progressToken') continue;
    (passMeta ??= {})[key] = m[key];
  }
  return { capabilities: capabilities, logLevel, progressToken, passMeta };
}

/** The client capability a server→client request needs, as `requiredCapabilities` names it. */
export function capabilityFor(method: string, params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (method === 'sampling/createMessage') return params?.tools ? { sampling: { tools: {} } } : { sampling: {} };
  if (method === 'roots/list') return { roots: {} };
  if (method === 'elicitation/create') return params?.mode === 'url' ? { elicitation: { url: {} } } : { elicitation: { form: {} } };
  return undefined;
}

/** Does the client's declaration cover `needed` (as returned by capabilityFor)? */
export function declares(capabilities: Record<string, unknown>, needed: Record<string, unknown>): boolean {
  const [name, sub] = Object.entries(needed)[0] as [string, Record<string, unknown>];
  const declared = capabilities[name];
  if (typeof declared !== 'object' || declared === null) return false;
  const fields = declared as Record<string, unknown>; // an array passes too, as it always has
  if (name === 'elicitation') {
    // An empty elicitation object means form mode (2025-11-25 compatibility).
    const mode = Object.keys(sub)[0];
    return fields[mode] !== undefined || (mode === 'form' && Object.keys(fields).length === 0);
  }
  return Object.keys(sub).every((k) => fields[k] !== undefined);
}
