/**
 * The Streamable HTTP headers of the modern era that mirror a request's body (MCP-Protocol-Version,
 * Mcp-Method, Mcp-Name, Mcp-Param-*), and their `=?base64?…?=` sentinel: read from clients by
 * the HTTP front, written for a modern upstream by the proxy.
 */
import type { JsonRpcRequest } from '../jsonrpc/message.js';
import { META } from './eras.js';

/** The body field Mcp-Name mirrors, by method (the tasks extension adds its methods' task ids). */
export const NAMED_METHODS: Record<string, 'name' | 'uri' | 'taskId'> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

const SENTINEL_PREFIX = '=?base64?';

/** A header value as the client meant it: the base64 sentinel decoded, others as they are. */
export function decodeHeaderValue(value: string): string | undefined {
  if (!value.startsWith(SENTINEL_PREFIX) || !value.endsWith('?=')) return value;
  const encoded = value.slice(9, -2);
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return undefined;
  return Buffer.from(encoded, 'base64').toString('utf8');
}

/**
 * A value as a header carries it: in the sentinel when it is empty, has spaces at either end,
 * holds a character outside printable ASCII, or would itself read as a sentinel.
 */
export function encodeHeaderValue(value: string): string {
  const plain = value !== '' && value.trim() === value && /^[\x20-\x7e]*$/.test(value) && !value.startsWith(SENTINEL_PREFIX);
  return plain ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** The header text of a mirrored argument; undefined for values a header cannot carry (objects, arrays). */
export function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/**
 * A tool's Mcp-Param-* headers: header name (lower case) → the path of the argument it mirrors (top-level, or
 * nested through `properties`).
 */
export type ParamHeaders = Map<string, string[]>;

/** The argument at `path` in a call's arguments; undefined when any step is missing. */
export function argumentAt(args: unknown, path: string[]): unknown {
  let value = args;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * The headers a modern request carries to a Streamable HTTP server, from its body
 * (`paramHeaders`: the tool's, for a tools/call).
 */
export function modernRequestHeaders(req: JsonRpcRequest, paramHeaders?: ParamHeaders): Record<string, string> {
  const meta = req.params?._meta as Record<string, unknown> | undefined;
  const headers: Record<string, string> = { 'mcp-protocol-version': String(meta?.[META.protocolVersion]), 'mcp-method': req.method };
  const field = NAMED_METHODS[req.method];
  const name = field ? req.params?.[field] : undefined;
  if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
  for (const [header, path] of paramHeaders ?? []) {
    const text = headerText(argumentAt(req.params?.arguments, path));
    if (text !== undefined) headers[header] = encodeHeaderValue(text);
  }
  return headers;
}

/** Deepest `properties` nesting read for `x-mcp-header` (schemas are the upstream's, so untrusted). */
const MAX_SCHEMA_DEPTH = 16;

/** A tool's Mcp-Param-* headers, from the properties of its input schema marked `x-mcp-header`, reached through `properties` only. */
export function paramHeadersOf(inputSchema: unknown): ParamHeaders | undefined {
  let out: ParamHeaders | undefined;
  const visit = (schema: unknown, path: string[]) => {
    const props = (schema as { properties?: unknown } | undefined)?.properties;
    if (typeof props !== 'object' || props === null || path.length >= MAX_SCHEMA_DEPTH) return;
    for (const [key, child] of Object.entries(props as Record<string, Record<string, unknown>>)) {
      const name = child?.['x-mcp-header'];
      if (typeof name === 'string' && name) (out ??= new Map()).set(`mcp-param-${name.toLowerCase()}`, [...path, key]);
      visit(child, [...path, key]);
    }
  };
  visit(inputSchema, []);
  return out;
}
