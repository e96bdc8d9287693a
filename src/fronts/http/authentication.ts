/**
 * Authentication at the HTTP front, as a hook on the MCP endpoint and the RFC 9728 metadata
 * routes: the principal goes on the request, refusals are 401/403 with a challenge (503 while
 * the JWKS cannot be fetched), and each client address has a budget of failed attempts per
 * minute, spent before a credential is checked. The probes authenticate through the same budget.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ProxyError } from '../../jsonrpc/errors.js';
import { noteExchange } from '../../ops/access-log.js';
import { challenge, resourceMetadata, type AuthConfig, type AuthOutcome, type Authenticator } from './auth.js';
import { sendError } from './errors.js';
import { clientAddress } from './client-key.js';
import { FailureCounter } from './limits.js';
import { routeOf, trackRoutes } from './route.js';

export interface AuthenticationOptions {
  authenticator: Authenticator;
  config: AuthConfig;
  /** The MCP endpoint's path, and the port it listens on (the resource's fallback URL). */
  path: string;
  port: number;
  /** A refusal for a spent budget (counted in /metrics, named in the access log). */
  onBlocked(req: FastifyRequest): void;
  log: Logger;
}

/** Authenticates a request with its address's budget; `blocked` gives the seconds to wait. */
export type Authenticate = (req: FastifyRequest) => Promise<AuthOutcome | { blocked: number }>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by authentication; '' when it is off. */
    principal: string;
  }
}

export function registerAuthentication(app: FastifyInstance, o: AuthenticationOptions): Authenticate {
  const { authenticator, config } = o;
  trackRoutes(app);
  app.decorateRequest('principal', '');
  const failures = new FailureCounter(config.failuresPerAddress);
  /**
   * A blocked address gets nothing checked but a static token (as cheap as the refusal); each
   * attempt is counted before it is verified (concurrent guesses cannot all pass the check) and
   * forgiven when it succeeds.
   */
  const authenticate: Authenticate = async (req) => {
    const address = clientAddress(req);
    const wait = failures.blockedFor(address);
    if (wait > 0) {
      const known = authenticator.staticCredential(req.headers);
      return known ? { principal: known } : { blocked: wait };
    }
    const attempt = failures.note(address);
    const outcome = await authenticator.authenticate(req.headers);
    // No credential is not a guess; neither is a key set that cannot be fetched.
    if ('principal' in outcome || outcome.error === 'invalid_request' || outcome.status === 503) attempt.forgive();
    return outcome;
  };
  if (!authenticator.enabled) return authenticate;

  /** The resource identifier: configured, or the endpoint as this request reached it (its Host was checked). */
  const resourceOf = (req: FastifyRequest): URL => {
    try {
      return new URL(config.resource ?? `${req.protocol}://${req.headers.host}${o.path}`);
    } catch {
      return new URL(o.path, `http://127.0.0.1:${o.port}`);
    }
  };
  /** The metadata document's URL for that resource (RFC 9728 §3.1: the path goes after the well-known part). */
  const metadataUrl = (req: FastifyRequest) => {
    const resource = resourceOf(req);
    return `${resource.origin}/.well-known/oauth-protected-resource${resource.pathname}`;
  };
  app.addHook('onRequest', async (req, reply) => {
    // The matched route, not the raw URL: the router decodes escapes (/mc%70 is /mcp).
    if (routeOf(req) !== o.path) return;
    const outcome = await authenticate(req);
    if ('principal' in outcome) {
      req.principal = outcome.principal;
      return;
    }
    return refuseAuthentication(req, reply, outcome);
  });
  const refuseAuthentication = (
    req: FastifyRequest,
    reply: FastifyReply,
    outcome: Exclude<Awaited<ReturnType<Authenticate>>, { principal: string }>,
  ) => {
    if ('blocked' in outcome) {
      o.onBlocked(req);
      reply.header('retry-after', String(outcome.blocked));
      return sendError(
        reply,
        new ProxyError(
          'RATE_LIMITED',
          'Too many failed authentication attempts from this address (auth.failuresPerAddress: ' +
            `${config.failuresPerAddress} per minute); retry after ${outcome.blocked} s`,
        ),
      );
    }
    noteExchange(req, undefined, { refused: `${outcome.error}${outcome.reason ? `: ${outcome.reason}` : ''}` });
    if (outcome.status === 503) {
      o.log.warn({ err: outcome.reason }, 'tokens cannot be checked: the JWKS is unavailable; answering 503');
      return sendError(reply, new ProxyError('AUTH_UNAVAILABLE', outcome.description));
    }
    reply.header('www-authenticate', challenge(outcome, metadataUrl(req), config.jwt?.requiredScopes ?? []));
    return sendError(reply, new ProxyError(outcome.status === 403 ? 'FORBIDDEN' : 'UNAUTHORIZED', outcome.description));
  };
  const metadata = async (req: FastifyRequest, reply: FastifyReply) => {
    // Derived from the request's Host unless configured: never stored by shared caches.
    reply
      .header('cache-control', config.resource ? 'max-age=300' : 'private, max-age=300')
      .send(resourceMetadata(config, resourceOf(req).href));
  };
  app.get('/.well-known/oauth-protected-resource', metadata);
  app.get(`/.well-known/oauth-protected-resource${o.path}`, metadata);
  return authenticate;
}
