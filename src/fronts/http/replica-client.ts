/**
 * The client's address across replicas. A replica that forwards a request to the replica holding
 * its call, task or legacy session (src/fronts/http/forward.ts) seals the address it determined for the client
 * into CLIENT_HEADER, for that one replica and for a minute; the receiving replica counts the
 * request as that client. Only a replica holding the shared secret (`replicas.secret`) can write
 * the header, so it is believed from nobody else, and the client's own `X-Forwarded-For` never
 * travels between replicas: neither replicas that trust one another (listen.trustProxy) nor ones
 * that do not count a forwarded client as anything but what the first replica saw.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Sealer } from '../../sealing/sealer.js';

/** Carries the sealed client address from the forwarding replica. */
export const CLIENT_HEADER = 'mcp-proxy-client';

/** How long a sealed address is good for: forwarding sends it at once; the rest is room for clocks that differ. */
const MAX_AGE_MS = 60_000;
/** Logged at most this often: a flood of headers that do not open makes one line. */
const LOG_EVERY_MS = 60_000;

interface ClientClaims {
  /** The client's address. */
  a: string;
  /** The replica it is for. */
  to: string;
  /** When it was sealed (ms since the epoch). */
  t: number;
}

/** The header's value: `address` as this replica determined it, for replica `to`. */
export function sealClient(sealer: Sealer, address: string, to: string, now = Date.now()): string {
  // No address is longer; what a balancer wrote there that is longer counts by its start anyway (./client-key.ts).
  return sealer.seal('clientAddress', { a: address.slice(0, 64), to, t: now } satisfies ClientClaims);
}

/** The address a header carries, or undefined when it is not one sealed for replica `self` within the last minute. */
export function openClient(sealer: Sealer, token: string, self: string, now = Date.now()): string | undefined {
  const claims = sealer.open<ClientClaims>('clientAddress', token);
  if (!claims || typeof claims.a !== 'string' || claims.to !== self || typeof claims.t !== 'number') return undefined;
  return Math.abs(now - claims.t) <= MAX_AGE_MS ? claims.a : undefined;
}

/**
 * Before authentication and the limits: a request whose CLIENT_HEADER opens counts as the client
 * it names (`forwardedClient`, read by ./client-key.ts); one whose header does not open counts as
 * what its connection says, as any other request.
 */
export function registerReplicaClient(app: FastifyInstance, o: { sealer: Sealer; replicaId: string; log: Logger }): void {
  app.decorateRequest('forwardedClient', undefined);
  let lastLog = 0;
  app.addHook('onRequest', (req, _reply, done) => {
    const token = req.headers[CLIENT_HEADER];
    if (token === undefined) return done();
    const address = typeof token === 'string' ? openClient(o.sealer, token, o.replicaId) : undefined;
    if (address !== undefined) {
      req.forwardedClient = address;
    } else if (Date.now() - lastLog >= LOG_EVERY_MS) {
      lastLog = Date.now();
      o.log.warn(
        { address: req.ip },
        `a request carried a ${CLIENT_HEADER} header that does not open (not from a replica with this secret, ` +
          "for another replica, or older than a minute): counted as its connection's address",
      );
    }
    done();
  });
}
