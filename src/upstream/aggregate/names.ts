/**
 * How several servers' names meet at one endpoint: tools and prompts are listed as
 * `<prefix><separator><name>` (a server with the prefix "" under its own names), and a name a
 * client calls leads back to its server; resources keep their URIs and are routed by what the
 * servers listed (exact URIs, then templates); a merged list's cursor holds each server's own.
 */
import { isObject } from '../../jsonrpc/message.js';

export interface NamedServer {
  name: string;
  /** "" lists the server's tools and prompts under their own names. */
  prefix: string;
}

export class ServerNames<S extends NamedServer> {
  /** Prefixed servers, longest prefix first (so that `a-b_x` is not read as server `a`'s `b_x`). */
  private readonly prefixed: S[];
  private readonly unprefixed: S | undefined;
  /** Resource URI → the server that listed it first. */
  private readonly uris = new Map<string, S>();
  /** Resource templates, as patterns, with their server. */
  private readonly templates = new Map<string, { pattern: RegExp; server: S }>();

  constructor(
    readonly servers: readonly S[],
    readonly separator: string,
  ) {
    this.prefixed = servers.filter((s) => s.prefix !== '').sort((a, b) => b.prefix.length - a.prefix.length);
    this.unprefixed = servers.find((s) => s.prefix === '');
  }

  /** The name a client sees for a server's tool or prompt. */
  outer(server: S, name: string): string {
    return server.prefix === '' ? name : `${server.prefix}${this.separator}${name}`;
  }

  /** The server and its own name for a name a client called; undefined: no server has that prefix. */
  inner(outer: string): { server: S; name: string } | undefined {
    for (const server of this.prefixed) {
      const head = server.prefix + this.separator;
      if (outer.startsWith(head) && outer.length > head.length) return { server, name: outer.slice(head.length) };
    }
    return this.unprefixed && { server: this.unprefixed, name: outer };
  }

  /** Notes a resource URI a server listed; the server that listed it first keeps it (returned). */
  claimUri(uri: string, server: S): S {
    const owner = this.uris.get(uri);
    if (owner) return owner;
    // Bounded: a server that lists ever new URIs only refreshes what is kept.
    if (this.uris.size >= MAX_URIS) this.uris.delete(this.uris.keys().next().value!);
    this.uris.set(uri, server);
    return server;
  }

  /** Notes a resource template a server listed; the server that listed it first keeps it (returned). */
  claimTemplate(template: string, server: S): S {
    const known = this.templates.get(template);
    if (known) return known.server;
    if (this.templates.size >= MAX_URIS) this.templates.delete(this.templates.keys().next().value!);
    this.templates.set(template, { pattern: templatePattern(template), server });
    return server;
  }

  /** The server a resource URI belongs to, as far as listings told; undefined: none listed it. */
  ownerOf(uri: string): S | undefined {
    const exact = this.uris.get(uri);
    if (exact) return exact;
    // Linear in the templates (a few per server); bounded by MAX_URI_LENGTH per test.
    if (uri.length > MAX_URI_LENGTH) return undefined;
    for (const { pattern, server } of this.templates.values()) if (pattern.test(uri)) return server;
    return undefined;
  }
}

/** URIs and templates remembered for routing, at most. */
const MAX_URIS = 10_000;
/** Longer URIs are not matched against templates (the patterns are linear, but the work is per template). */
const MAX_URI_LENGTH = 8192;

/**
 * An RFC 6570 template as a pattern over the URIs it expands to: literal text as is, a `{+var}`
 * or `{#var}` expression as any text, any other expression as text without `/`, `?` and `#`.
 * No nested quantifiers: matching stays linear.
 */
export function templatePattern(template: string): RegExp {
  let source = '';
  for (const part of template.split(/(\{[^}]*\})/)) {
    if (!part.startsWith('{')) source += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else source += /^\{[+#]/.test(part) ? '.*' : '[^/?#]*';
  }
  return new RegExp(`^${source}$`);
}

/** A merged list's cursor: each server's own cursor, by server name, for the servers that have more to list. */
export function encodeCursor(positions: Record<string, string>): string {
  return Buffer.from(JSON.stringify(positions)).toString('base64url');
}

/** The servers' cursors a merged cursor holds; undefined: it is no cursor of the proxy's. */
export function decodeCursor(cursor: string, names: ReadonlySet<string>): Record<string, string> | undefined {
  if (cursor.length > 64 * 1024) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    return undefined;
  }
  if (!isObject(value) || Object.keys(value).length === 0) return undefined;
  for (const [name, position] of Object.entries(value)) if (!names.has(name) || typeof position !== 'string') return undefined;
  return value as Record<string, string>;
}
