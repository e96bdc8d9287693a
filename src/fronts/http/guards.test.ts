import { describe, expect, it } from 'vitest';
import { hostGuard, originGuard } from './guards.js';

describe('originGuard', () => {
  it('accepts no Origin and loopback origins by default, nothing else', () => {
    const ok = originGuard(undefined);
    expect([undefined, 'http://localhost:3000', 'https://127.0.0.1', 'http://[::1]:8080'].map(ok)).toEqual([true, true, true, true]);
    expect(
      ['http://evil.example', 'http://localhost.evil.example', 'http://127.attacker.example', 'file://localhost', 'null'].map(ok),
    ).toEqual([false, false, false, false, false]);
  });
  it('uses an explicit list exactly, or allows all with "*"', () => {
    expect(originGuard(['https://app.example'])('https://app.example')).toBe(true);
    expect(originGuard(['https://app.example'])('http://localhost:1')).toBe(false);
    expect(originGuard(['*'])('http://anything')).toBe(true);
  });
});

describe('hostGuard', () => {
  it('accepts only loopback names by default, wherever the proxy is bound', () => {
    const ok = hostGuard(undefined);
    expect(['localhost:8080', '127.0.0.1', '127.0.0.2:80', '[::1]:1'].map(ok)).toEqual([true, true, true, true]);
    expect(['evil.example', 'evil.example:8080', '127.attacker.example', undefined].map(ok)).toEqual([false, false, false, false]);
  });
  it('uses an explicit list (with or without ports), or allows all with "*"', () => {
    expect(hostGuard(['mcp.internal'])('mcp.internal:8080')).toBe(true);
    expect(hostGuard(['mcp.internal:8080'])('mcp.internal:8080')).toBe(true);
    expect(hostGuard(['mcp.internal'])('localhost')).toBe(false);
    expect(hostGuard(['*'])('anything')).toBe(true);
  });
});
