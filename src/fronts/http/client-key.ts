/**
 * Who a client is, for every per-client limit: one key, computed here and nowhere else. An
 * authenticated client is its principal; otherwise its address counts, as one key per IPv4
 * address (also when mapped into IPv6) and one per IPv6 /64 (one host is given a whole /64 to
 * rotate through). Request rate, requests in flight, sessions, tasks, calls waiting for input and
 * the share of pooled upstream sessions count under `limitKey`; connection caps and failed
 * authentication, which come before a principal is known, under `addressKey`.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The client's address as the replica that forwarded this request saw it (verified); unset otherwise. */
    forwardedClient?: string;
  }
}

/** Longer than any address: what a balancer wrote there that is none is still bounded as a key. */
const MAX_KEY_CHARS = 64;

/** The client's address: as the forwarding replica saw it (see ./replica-client.ts), else as the connection or a trusted balancer says. */
export function clientAddress(req: FastifyRequest): string {
  return req.forwardedClient ?? req.ip;
}

/** The key per-client limits count under: the principal, or the client's address without authentication. */
export function limitKey(req: FastifyRequest): string {
  return req.principal || `address:${addressKey(clientAddress(req))}`;
}

/** What a client address counts as: an IPv4 address (also when mapped into IPv6), or an IPv6 address's /64. */
export function addressKey(address: string): string {
  if (isIPv4(address)) return address;
  const bare = address.split('%')[0];
  const groups = isIPv6(bare) ? ipv6Groups(bare) : undefined;
  if (!groups) return address.slice(0, MAX_KEY_CHARS);
  // ::ffff:a.b.c.d (IPv4-mapped) is the IPv4 client a.b.c.d, however it is spelt.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted IPv4 part is two of them). */
function ipv6Groups(address: string): number[] | undefined {
  const [head, tail] = address.split('::');
  const parse = (part: string | undefined): number[] => {
    if (!part) return [];
    const out: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const [a, b, c, d] = piece.split('.').map(Number);
        out.push((a << 8) | b, (c << 8) | d);
      } else out.push(parseInt(piece, 16));
    }
    return out;
  };
  const front = parse(head);
  const back = parse(tail);
  const groups = tail === undefined ? front : [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  return groups.length === 8 ? groups : undefined;
}
