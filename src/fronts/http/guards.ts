/**
 * DNS-rebinding protection for the HTTP endpoint: which Origin and Host headers are accepted.
 * Browsers always send Origin on cross-site requests; non-browser clients usually send none.
 * `registerGuards` puts the checks first on every request, after the connection caps' refusals.
 */
import { isIPv4 } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ProxyError } from '../../jsonrpc/errors.js';
import { refusalOf } from './connections.js';
import { sendError } from './errors.js';
import { routeOf, trackRoutes } from './route.js';

export interface GuardOptions {
  /** The MCP endpoint's path: it and the OAuth metadata are guarded; probes may name the pod's IP as Host. */
  path: string;
  allowedHosts?: string[];
  allowedOrigins?: string[];
  /** Origins allowed for CORS pass the DNS-rebinding check too. */
  corsOrigins?: string[];
  /** This replica's URL as other replicas reach it: its host is accepted beside allowedHosts (forwarded retries). */
  replicaUrl?(): string | undefined;
}

/** Registers the first hook of every request; returns the Host check (the probes use it too). */
export function registerGuards(app: FastifyInstance, o: GuardOptions): (host: string | undefined) => boolean {
  const originOk = originGuard(o.allowedOrigins, o.corsOrigins);
  const listedHostOk = hostGuard(o.allowedHosts);
  let self: { url?: string; host?: string } = {};
  const selfHost = () => {
    const url = o.replicaUrl?.();
    if (url !== self.url) self = { url, host: url ? new URL(url).host.toLowerCase() : undefined };
    return self.host;
  };
  const hostOk = (host: string | undefined) =>
    listedHostOk(host) || (host !== undefined && validHost(host) && host.toLowerCase() === selfHost());
  trackRoutes(app);
  app.addHook('onRequest', (req, reply, done) => {
    const refused = refusalOf(req.raw.socket);
    if (refused) return sendError(reply, refused);
    const route = routeOf(req);
    if (route !== o.path && !route?.startsWith('/.well-known/')) return done();
    if (!hostOk(req.headers.host))
      return sendError(reply, new ProxyError('FORBIDDEN', `Host header "${req.headers.host ?? ''}" is not allowed`));
    if (!originOk(req.headers.origin))
      return sendError(reply, new ProxyError('FORBIDDEN', `Origin "${req.headers.origin}" is not allowed`));
    done();
  });
  return hostOk;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** localhost, [::1] or a 127.x.y.z address (not a name that merely starts with "127."). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || (isIPv4(host) && host.startsWith('127.'));
}

/** Whether binding `host` (listen.host: a name, an IPv4 or a bare or bracketed IPv6 address) keeps the endpoint on this machine. */
export function isLoopbackBind(host: string): boolean {
  return isLoopbackHost(host.startsWith('[') || !host.includes(':') ? host : `[${host}]`);
}

/** A loopback client address as a socket reports it: 127.x.y.z, ::1, or IPv4 mapped into IPv6. */
export function isLoopbackAddress(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || (isIPv4(v4) && v4.startsWith('127.'));
}

/** Returns a predicate over the Origin header (undefined = header absent, always accepted). */
export function originGuard(allowed: string[] | undefined, also: string[] = []): (origin: string | undefined) => boolean {
  if (allowed?.includes('*') || also.includes('*')) return () => true;
  const exact = new Set([...(allowed ?? []), ...also]);
  return (origin) => {
    if (origin === undefined) return true;
    if (exact.has(origin)) return true;
    if (allowed) return false;
    try {
      const url = new URL(origin);
      return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname);
    } catch {
      return false;
    }
  };
}

/**
 * Returns a predicate over the Host header. Without a list only loopback names pass, wherever
 * the proxy is bound: a container binding 0.0.0.0 behind a port published on 127.0.0.1 is still
 * reached as localhost, and any other name must be listed on purpose. Entries may carry a port.
 */
export function hostGuard(allowed: string[] | undefined): (host: string | undefined) => boolean {
  if (allowed?.includes('*')) return (host) => host !== undefined && validHost(host);
  const names = new Set((allowed ?? [...LOOPBACK_NAMES]).map((h) => h.toLowerCase()));
  return (host) => {
    if (host === undefined || !validHost(host)) return false;
    const h = host.toLowerCase();
    const name = hostnameOf(h);
    return names.has(h) || names.has(name) || (!allowed && isLoopbackHost(name));
  };
}

/** A Host header as RFC 9110 allows it: a name or IP literal and an optional port, no userinfo or quotes. */
function validHost(host: string): boolean {
  return VALID_HOST.test(host);
}

const VALID_HOST = /^(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** "example.com:8080" → "example.com", "[::1]:8080" → "[::1]". */
function hostnameOf(host: string): string {
  const h = host.toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}
