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
  // How Node spells an IPv4 client on a dual-stack socket: no need to read the groups.
  if (address.startsWith('::ffff:') && isIPv4(address.slice(7))) return address.slice(7);
  const zone = address.indexOf('%');
  const bare = zone === -1 ? address : address.slice(0, zone);
  const groups = isIPv6(bare) ? ipv6Groups(bare) : undefined;
  if (!groups) return address.slice(0, MAX_KEY_CHARS);
  // ::ffff:a.b.c.d (IPv4-mapped) is the IPv4 client a.b.c.d, however it is spelt.
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff)
    return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
  return `${groups[0].toString(16)}:${groups[1].toString(16)}:${groups[2].toString(16)}:${groups[3].toString(16)}::/64`;
}

/**
 * The eight 16-bit groups of an address isIPv6 accepted, in one pass: `::` stands for the zero
 * groups the others leave, and a dotted IPv4 ending is the last two.
 */
function ipv6Groups(address: string): number[] | undefined {
  const groups: number[] = [];
  let gap = -1;
  let i = 0;
  while (i < address.length) {
    if (address.charCodeAt(i) === COLON) {
      gap = groups.length; // only "::" reaches here: a single colon is stepped over below
      i += i === 0 ? 2 : 1;
      continue;
    }
    let end = i;
    let value = 0;
    for (let c = address.charCodeAt(end); end < address.length && c !== COLON && c !== DOT; c = address.charCodeAt(++end))
      value = value * 16 + (c <= 57 ? c - 48 : (c | 32) - 87);
    if (address.charCodeAt(end) === DOT) {
      const [a, b, c, d] = address.slice(i).split('.').map(Number);
      groups.push((a << 8) | b, (c << 8) | d);
      break;
    }
    groups.push(value);
    i = end + 1;
  }
  if (gap !== -1) groups.splice(gap, 0, ...new Array<number>(8 - groups.length).fill(0));
  return groups.length === 8 ? groups : undefined;
}

const COLON = 58;
const DOT = 46;
