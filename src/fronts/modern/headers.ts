/**
 * Streamable HTTP header rules of the modern era: the headers mirror the body so that
 * intermediaries can route without parsing it, and the body stays authoritative. A missing or
 * different header (after decoding the `=?base64?…?=` sentinel) is a HeaderMismatch (-32020).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ProxyError } from '../../jsonrpc/errors.js';
import type { JsonRpcRequest } from '../../jsonrpc/message.js';
import { argumentAt, decodeHeaderValue, headerText, NAMED_METHODS, type ParamHeaders } from '../../mcp/http-headers.js';

function mismatch(message: string): ProxyError {
  return new ProxyError('HEADER_MISMATCH', `Header mismatch: ${message}`);
}

function single(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** Checks MCP-Protocol-Version, Mcp-Method and Mcp-Name against the body. */
export function checkModernHeaders(headers: IncomingHttpHeaders, req: JsonRpcRequest, version: string): void {
  const headerVersion = single(headers, 'mcp-protocol-version');
  if (headerVersion === undefined)
    throw mismatch(`MCP-Protocol-Version header is required and must equal _meta protocolVersion "${version}"`);
  if (headerVersion !== version) throw mismatch(`MCP-Protocol-Version "${headerVersion}" differs from _meta protocolVersion "${version}"`);
  const method = single(headers, 'mcp-method');
  if (method === undefined) throw mismatch(`Mcp-Method header is required and must equal the method "${req.method}"`);
  if (method !== req.method) throw mismatch(`Mcp-Method "${method}" differs from the method "${req.method}"`);
  const field = NAMED_METHODS[req.method];
  if (field) {
    const expected = req.params?.[field];
    const raw = single(headers, 'mcp-name');
    if (raw === undefined) throw mismatch(`Mcp-Name header is required for ${req.method} and must equal params.${field}`);
    const name = decodeHeaderValue(raw);
    if (name === undefined) throw mismatch('Mcp-Name carries a malformed base64 value');
    if (name !== expected) throw mismatch(`Mcp-Name differs from params.${field}`);
  }
}

/**
 * Checks each Mcp-Param-* header whose argument the tool names through `x-mcp-header`. A header
 * carries a string, a number or a boolean as text; an argument of any other type cannot be
 * mirrored, so it never matches. Unrecognized Mcp-Param-* headers are allowed.
 */
export function checkParamHeaders(headers: IncomingHttpHeaders, req: JsonRpcRequest, paramHeaders: ParamHeaders | undefined): void {
  if (!paramHeaders?.size || req.method !== 'tools/call') return;
  for (const [header, path] of paramHeaders) {
    const argument = path.join('.');
    const value = argumentAt(req.params?.arguments, path);
    const raw = single(headers, header);
    if (value === undefined || value === null) {
      if (raw !== undefined) throw mismatch(`${header} is set but argument "${argument}" is absent`);
      continue;
    }
    if (raw === undefined) throw mismatch(`${header} header is required: argument "${argument}" is set`);
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) throw mismatch(`${header} carries a malformed base64 value`);
    if (decoded !== headerText(value)) throw mismatch(`${header} differs from argument "${argument}"`);
  }
}
