/** The `auth` section of the configuration: static bearer tokens, JWTs, and the protected resource metadata. */
import { z } from 'zod';

const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;

export const authSchema = z
  .object({
    tokens: z
      .array(
        z
          .object({
            name: z
              .string()
              .regex(/^[A-Za-z0-9_.@:-]{1,64}$/, 'letters, digits, "_", ".", "@", ":" and "-", at most 64')
              .describe('Who holds the token (the principal, in logs and limits).'),
            sha256: z
              .string()
              .regex(/^[0-9a-fA-F]{64}$/, 'the SHA-256 of the token in hex (mcp-negotiate-proxy hash-token prints it)')
              .describe('SHA-256 of the token, hex; the token itself is never stored.'),
          })
          .strict(),
      )
      .default([])
      .describe('Static bearer tokens / API keys, stored hashed. Clients send Authorization: Bearer <token> or the apiKeyHeader.'),
    apiKeyHeader: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/)
      .default('x-api-key')
      .describe('Header that may carry a static token instead of Authorization.'),
    jwt: z
      .object({
        jwksUrl: z.url({ protocol: /^https?$/ }).describe('Where the signing keys are published (JWKS).'),
        issuer: z.string().min(1).describe('Required `iss`.'),
        audience: z.string().min(1).describe("Required `aud` (usually this endpoint's URL)."),
        requiredScopes: z
          .array(z.string().min(1))
          .default([])
          .describe('Scopes every token must grant (`scope` or `scp`); missing ones get 403 insufficient_scope.'),
        principalClaim: z.string().min(1).default('sub').describe('The claim that names the principal.'),
        algorithms: z
          .array(z.enum(JWT_ALGORITHMS))
          .min(1)
          .default([...JWT_ALGORITHMS])
          .describe('Signature algorithms accepted (asymmetric only: a shared-secret HMAC key would let anyone who holds it mint tokens).'),
        requireExpiry: z
          .boolean()
          .default(true)
          .describe('Refuse tokens without an `exp` claim (a token that never expires stays usable forever once leaked).'),
      })
      .strict()
      .optional()
      .describe('JWT bearer tokens from an OAuth authorization server.'),
    authorizationServers: z
      .array(z.url())
      .default([])
      .describe('Issuer URLs listed in the protected resource metadata (RFC 9728), for clients that obtain tokens themselves.'),
    resource: z
      .url()
      .optional()
      .describe("The resource identifier in the metadata document (default: this endpoint's URL as the client reached it)."),
    allowUnauthenticated: z
      .boolean()
      .default(false)
      .describe('Serve a non-loopback address without authentication (something in front authenticates).'),
    failuresPerAddress: z
      .number()
      .int()
      .positive()
      .default(20)
      .describe(
        'Failed authentication attempts one client address may make per minute; ' +
          'beyond it 429 with Retry-After, before any token is checked.',
      ),
  })
  .strict()
  .describe('Who may connect. Off unless tokens or jwt are set; required when listening on a non-loopback address.');
