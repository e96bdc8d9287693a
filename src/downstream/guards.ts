/**
 * DNS-rebinding protection for the HTTP endpoint: which Origin and Host headers are accepted.
 * Browsers always send Origin on cross-site requests; non-browser clients usually send none.
 */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || host.startsWith('127.');
}

/** Returns a predicate over the Origin header (undefined = header absent, always accepted). */
export function originGuard(allowed: string[] | undefined): (origin: string | undefined) => boolean {
  if (allowed?.includes('*')) return () => true;
  const exact = new Set(allowed ?? []);
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

/** Returns a predicate over the Host header; only enforced by default when bound to loopback. */
export function hostGuard(allowed: string[] | undefined, bindHost: string): (host: string | undefined) => boolean {
  if (allowed?.includes('*') || (!allowed && !isLoopbackHost(bindHost))) return () => true;
  const names = new Set((allowed ?? [...LOOPBACK_NAMES]).map((h) => h.toLowerCase()));
  return (host) => {
    if (host === undefined) return false;
    return names.has(hostnameOf(host));
  };
}

/** "example.com:8080" → "example.com", "[::1]:8080" → "[::1]". */
function hostnameOf(host: string): string {
  const h = host.toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}
