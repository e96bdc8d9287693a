/**
 * Who may use the MCP endpoint: static bearer tokens or API keys (stored as SHA-256 hashes in
 * the config, compared in constant time) and JWTs checked against a JWKS (issuer, audience,
 * scopes). The result is a principal, bound into session tokens and requestState; client
 * credentials stop here and never reach the upstream. Failures become 401 with a
 * `WWW-Authenticate` challenge naming the protected resource metadata (RFC 9728), or 403 for
 * a valid token that lacks a required scope.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { Config } from '../../config/schema.js';
import { isLoopbackBind } from './guards.js';

export type AuthConfig = Config['auth'];

export type AuthOutcome =
  | { principal: string }
  | { status: 401 | 403; error: 'invalid_request' | 'invalid_token' | 'insufficient_scope'; description: string; reason?: string }
  /** The keys to check a token against cannot be fetched now: the client should retry, not re-authenticate. */
  | { status: 503; error: 'temporarily_unavailable'; description: string; reason: string };

export type AuthRefusal = Extract<AuthOutcome, { status: number }>;

export interface Authenticator {
  /** Whether requests must authenticate at all. */
  readonly enabled: boolean;
  authenticate(headers: Record<string, string | string[] | undefined>): Promise<AuthOutcome>;
  /**
   * The principal of a static credential (bearer token or API key) the request presents, if any (a hash and a
   * comparison: no JWT is checked).
   */
  staticCredential(headers: Record<string, string | string[] | undefined>): string | undefined;
}

/** The hash stored in the config for a token: lowercase hex SHA-256. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function createAuthenticator(config: AuthConfig): Authenticator {
  const statics = config.tokens.map((t) => ({ name: t.name, hash: Buffer.from(t.sha256.toLowerCase(), 'hex') }));
  const jwt = config.jwt;
  const jwks = jwt ? createRemoteJWKSet(new URL(jwt.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 }) : undefined;
  const enabled = authConfigured(config);
  const apiKeyHeader = config.apiKeyHeader.toLowerCase();
  const verifyOptions = jwt && {
    issuer: jwt.issuer,
    audience: jwt.audience,
    clockTolerance: 30,
    algorithms: jwt.algorithms,
    requiredClaims: jwt.requireExpiry ? ['exp'] : [],
  };

  const staticCredential = (presented: string): string | undefined => {
    const digest = Buffer.from(hashToken(presented), 'hex');
    // Every entry is compared, so the time taken does not say which one matched.
    let match: string | undefined;
    for (const s of statics) if (timingSafeEqual(s.hash, digest) && match === undefined) match = s.name;
    return match === undefined ? undefined : `token:${match}`;
  };

  return {
    enabled,
    staticCredential(headers) {
      const presented = credentialOf(headers, apiKeyHeader);
      return presented ? staticCredential(presented) : undefined;
    },
    async authenticate(headers) {
      const presented = credentialOf(headers, apiKeyHeader);
      if (!presented)
        return { status: 401, error: 'invalid_request', description: 'Authentication required: send Authorization: Bearer <token>' };
      const principal = staticCredential(presented);
      if (principal) return { principal };
      if (!jwt || !jwks || presented.split('.').length !== 3)
        return { status: 401, error: 'invalid_token', description: 'The token is not valid' };
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(presented, jwks, verifyOptions));
      } catch (err) {
        // What failed stays in the proxy's log: a client learns only that the token was refused.
        const reason = (err as Error).message;
        if (keysUnavailable(err))
          return {
            status: 503,
            error: 'temporarily_unavailable',
            description: 'Tokens cannot be checked right now (the signing keys are unavailable); retry shortly',
            reason,
          };
        return { status: 401, error: 'invalid_token', description: 'The token is not valid', reason };
      }
      const granted = scopesOf(payload);
      const missing = jwt.requiredScopes.filter((s) => !granted.has(s));
      if (missing.length)
        return { status: 403, error: 'insufficient_scope', description: `The token lacks the scope(s): ${missing.join(' ')}` };
      const subject = payload[jwt.principalClaim];
      if (typeof subject !== 'string' || subject === '')
        return { status: 401, error: 'invalid_token', description: `The token has no "${jwt.principalClaim}" claim` };
      return { principal: `jwt:${subject}` };
    },
  };
}

/** The `WWW-Authenticate` value for a refusal (RFC 6750 §3, RFC 9728 §5.1). */
export function challenge(outcome: AuthRefusal, metadataUrl: string, scopes: string[]): string {
  const parts = [`resource_metadata="${metadataUrl.replace(/["\\]/g, '')}"`];
  if (outcome.error !== 'invalid_request')
    parts.push(`error="${outcome.error}"`, `error_description="${outcome.description.replace(/["\\]/g, "'")}"`);
  if (scopes.length) parts.push(`scope="${scopes.join(' ')}"`);
  return `Bearer ${parts.join(', ')}`;
}

/** The protected resource metadata document (RFC 9728) for the MCP endpoint at `resource`. */
export function resourceMetadata(config: AuthConfig, resource: string): Record<string, unknown> {
  return {
    resource,
    ...(config.authorizationServers.length ? { authorization_servers: config.authorizationServers } : {}),
    ...(config.jwt?.requiredScopes.length ? { scopes_supported: config.jwt.requiredScopes } : {}),
    bearer_methods_supported: ['header'],
    resource_name: 'mcp-negotiate-proxy',
  };
}

/** Whether the config asks clients to authenticate at all (static tokens or JWTs). */
export function authConfigured(config: AuthConfig): boolean {
  return config.tokens.length > 0 || config.jwt !== undefined;
}

/**
 * Refuses an unauthenticated HTTP endpoint on a non-loopback address unless the operator said
 * so: anyone who reaches the port would use the upstream with the proxy's credentials. The
 * problem with listen.host, and what to do, or undefined when there is none.
 */
export function exposureProblem(config: Config): string | undefined {
  const { transport, host } = config.listen;
  if (transport !== 'http' || authConfigured(config.auth) || config.auth.allowUnauthenticated) return undefined;
  if (isLoopbackBind(host)) return undefined;
  return (
    `${host} is reachable from other machines, and no authentication is configured: ` +
    'anyone who reaches the port would use the upstream. Configure auth.tokens or auth.jwt, ' +
    'pass --allow-unauthenticated (MCP_PROXY_ALLOW_UNAUTHENTICATED=1) if something in ' +
    'front of the proxy authenticates, or listen on loopback only (--host 127.0.0.1).'
  );
}

function credentialOf(headers: Record<string, string | string[] | undefined>, apiKeyHeader: string): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer +(\S+) *$/i.exec(auth);
    return m ? m[1] : undefined;
  }
  const key = headers[apiKeyHeader];
  return typeof key === 'string' && key !== '' ? key : undefined;
}

function scopesOf(payload: JWTPayload): Set<string> {
  const scope = payload.scope ?? payload.scp;
  if (typeof scope === 'string') return new Set(scope.split(' ').filter(Boolean));
  if (Array.isArray(scope)) return new Set(scope.filter((s): s is string => typeof s === 'string'));
  return new Set();
}

/** A verification that failed because the JWKS could not be had (unreachable, timed out, not a key set), not because of the token. */
function keysUnavailable(err: unknown): boolean {
  if (!(err instanceof errors.JOSEError)) return true; // fetch itself failed
  return (
    err instanceof errors.JWKSTimeout ||
    err instanceof errors.JWKSInvalid ||
    (err.code === 'ERR_JOSE_GENERIC' && err.message.includes('JSON Web Key Set'))
  );
}
