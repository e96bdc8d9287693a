/**
 * The Streamable HTTP headers of the modern era that mirror a request's body (MCP-Protocol-Version,
 * Mcp-Method, Mcp-Name, Mcp-Param-*), and their `=?base64?…?=` sentinel: read from clients by
 * the HTTP front, written for a modern upstream by the proxy.
 */
import type { JsonRpcRequest } from '../jsonrpc/message.js';
import { META } from './eras.js';

/** The body field Mcp-Name mirrors, by method (the tasks extension adds its methods' task ids). */
export const NAMED_METHODS: Record<string, 'name' | 'uri' | 'taskId'> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri', 'tasks/get': 'taskId', 'tasks/update': 'taskId', 'tasks/cancel': 'taskId' };

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
 * The headers a modern request carries to a Streamable HTTP server, from its body
 * (`paramHeaders`: the tool's Mcp-Param-* header, lower case, → argument).
 */
export function modernRequestHeaders(req: JsonRpcRequest, paramHeaders?: Map<string, string>): Record<string, string> {
  const meta = req.params?._meta as Record<string, unknown> | undefined;
  const headers: Record<string, string> = { 'mcp-protocol-version': String(meta?.[META.protocolVersion]), 'mcp-method': req.method };
  const field = NAMED_METHODS[req.method];
  const name = field ? req.params?.[field] : undefined;
  if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
  const args = (req.params?.arguments ?? {}) as Record<string, unknown>;
  for (const [header, argument] of paramHeaders ?? []) {
    const text = headerText(args[argument]);
    if (text !== undefined) headers[header] = encodeHeaderValue(text);
  }
  return headers;
}

/** Header name (lower case) → argument, from a tool's input schema properties marked `x-mcp-header`. */
export function paramHeadersOf(inputSchema: unknown): Map<string, string> | undefined {
  const props = (inputSchema as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties;
  if (typeof props !== 'object' || props === null) return undefined;
  let out: Map<string, string> | undefined;
  for (const [argument, schema] of Object.entries(props)) {
    const name = schema?.['x-mcp-header'];
    if (typeof name === 'string' && name) (out ??= new Map()).set(`mcp-param-${name.toLowerCase()}`, argument);
  }
  return out;
}
