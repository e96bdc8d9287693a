import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { addressKey, limitKey } from './client-key.js';

describe('addressKey', () => {
  it('counts IPv4 as it is, IPv4 mapped into IPv6 as IPv4 however it is spelt, and IPv6 by its /64', () => {
    expect(addressKey('203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('::FFFF:203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('::ffff:cb00:7109')).toBe('203.0.113.9');
    expect(addressKey('0:0:0:0:0:ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('2001:db8:0:1:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:0:1::/64');
    expect(addressKey('2001:0db8:0000:0001::5')).toBe('2001:db8:0:1::/64');
    expect(addressKey('2001:DB8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(addressKey('2001:db8::1%eth0')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    // A dotted tail is two groups: the /64 is read from where the groups really are.
    expect(addressKey('::1:2:3:4:203.0.113.9')).toBe('0:0:1:2::/64');
    expect(addressKey('64:ff9b::203.0.113.9')).toBe('64:ff9b:0:0::/64');
  });

  it('gives every address of one /64 the same key, and other /64s their own', () => {
    const keys = new Set(Array.from({ length: 12 }, (_, i) => addressKey(`2001:db8:aa:bb:${i.toString(16)}::${i + 1}`)));
    expect([...keys]).toEqual(['2001:db8:aa:bb::/64']);
    expect(addressKey('2001:db8:aa:bc::1')).not.toBe(addressKey('2001:db8:aa:bb::1'));
  });

  it('keeps what is no address as it is, bounded', () => {
    expect(addressKey('unknown')).toBe('unknown');
    expect(addressKey('x'.repeat(10_000))).toHaveLength(64);
    expect(addressKey('2001:db8::1::2')).toBe('2001:db8::1::2');
  });
});

describe('limitKey', () => {
  const request = (principal: string, ip: string, forwardedClient?: string) => ({ principal, ip, forwardedClient }) as FastifyRequest;

  it("is the principal when there is one, else the address key, with the forwarding replica's address first", () => {
    expect(limitKey(request('alice', '203.0.113.9'))).toBe('alice');
    expect(limitKey(request('', '2001:db8:0:1::5'))).toBe('address:2001:db8:0:1::/64');
    expect(limitKey(request('', '::ffff:203.0.113.10'))).toBe(limitKey(request('', '203.0.113.10')));
    expect(limitKey(request('', '127.0.0.1', '203.0.113.10'))).toBe('address:203.0.113.10');
  });
});
