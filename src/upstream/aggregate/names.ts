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
  /** The clashes of names or URIs warned of already: each is told once. */
  private readonly told = new Set<string>();
  /** Resource templates, as patterns, with their server. */
  private readonly templates = new Map<string, { parts: TemplatePart[]; server: S }>();

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
    const parts = templateParts(template);
    // A template that starts with an expression would claim the URIs of every other server: it routes nothing.
    if (typeof parts[0] !== 'string' || parts.length > MAX_TEMPLATE_PARTS) return server;
    if (this.templates.size >= MAX_TEMPLATES) this.templates.delete(this.templates.keys().next().value!);
    this.templates.set(template, { parts, server });
    return server;
  }

  /** Whether a clash (of a name or URI between two servers) is seen for the first time: it is warned of once. */
  firstClash(key: string): boolean {
    if (this.told.has(key) || this.told.size >= MAX_URIS) return false;
    this.told.add(key);
    return true;
  }

  /** The server a resource URI belongs to, as far as listings told (`exactly`: as a listed URI); undefined: none listed it. */
  ownerOf(uri: string, exactly = false): S | undefined {
    const exact = this.uris.get(uri);
    if (exact || exactly) return exact;
    // Each template costs the URI's length times its parts: both are bounded.
    if (uri.length > MAX_URI_LENGTH) return undefined;
    for (const { parts, server } of this.templates.values()) if (matchesTemplate(parts, uri)) return server;
    return undefined;
  }
}

/** URIs and templates remembered for routing, at most. */
const MAX_URIS = 10_000;
const MAX_TEMPLATES = 256;
/** Longer URIs are not matched against templates (each match costs the URI's length times the template's parts). */
const MAX_URI_LENGTH = 4096;

/** A template's parts: literal text, or an expression (`segment`: text without `/`, `?` and `#`; `any`: any text). */
type TemplatePart = string | { expression: 'segment' | 'any' };

/** Parts a template may have and still be matched (more: it routes nothing). */
const MAX_TEMPLATE_PARTS = 16;

/**
 * A template, as what its URIs are: an expression that may expand to `/`, `?` or `#` (`{+var}`,
 * `{#var}`, `{/var}`, `{?var}`, `{&var}`) any text, any other one (`{var}`, `{.var}`, `{;var}`)
 * text without them.
 */
export function templateParts(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  // Read once from left to right: an expression is `{` to the next `}`; a `{` without one is text.
  for (let at = 0; at < template.length;) {
    const open = template.indexOf('{', at);
    const close = open === -1 ? -1 : template.indexOf('}', open);
    if (close === -1) {
      parts.push(template.slice(at));
      break;
    }
    if (open > at) parts.push(template.slice(at, open));
    parts.push({ expression: '+#/?&'.includes(template[open + 1]) ? 'any' : 'segment' });
    at = close + 1;
  }
  return parts;
}

/**
 * Whether `uri` is one of the URIs a template expands to. The positions each part can end at are
 * carried along the URI once per part: time is the URI's length times the parts, whatever the
 * template (a regular expression of adjacent wildcards would backtrack without bound).
 */
export function matchesTemplate(parts: TemplatePart[], uri: string): boolean {
  if (parts.length > MAX_TEMPLATE_PARTS) return false;
  let at = new Uint8Array(uri.length + 1);
  at[0] = 1;
  for (const part of parts) {
    if (!at.includes(1)) return false;
    const next = new Uint8Array(uri.length + 1);
    if (typeof part === 'string') {
      for (let i = 0; i + part.length <= uri.length; i++) if (at[i] && uri.startsWith(part, i)) next[i + part.length] = 1;
    } else {
      for (let i = 0; i <= uri.length; i++) {
        const extends_ = i > 0 && next[i - 1] === 1 && (part.expression === 'any' || !'/?#'.includes(uri[i - 1]));
        next[i] = at[i] || extends_ ? 1 : 0;
      }
    }
    at = next;
  }
  return at[uri.length] === 1;
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
