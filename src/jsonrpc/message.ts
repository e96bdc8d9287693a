/**
 * JSON-RPC 2.0 message shapes, guards and parsing. A parsed message keeps the exact text it
 * arrived as (`raw`), so an untouched message is relayed byte for byte.
 */
import { isUtf8 } from 'node:buffer';
import { readAnswer, type ResultSpan } from './envelope.js';
export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}
export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  result?: Record<string, unknown>;
  error?: JsonRpcErrorObject;
}
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** A JSON object (not null, not an array): what params, results and `_meta` must be. */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A message's text on the wire: a string, or an upstream's bytes relayed as they came. */
export type Wire = string | Buffer;

/** A message plus, when it came off the wire unchanged, the text it arrived as. */
export interface Frame {
  msg: JsonRpcMessage;
  raw?: Wire;
  /** Where an undecoded answer's result lies in `raw`, and its members (see envelope.ts). */
  result?: ResultSpan;
}

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

export function isRequest(m: JsonRpcMessage): m is JsonRpcRequest {
  return 'method' in m && 'id' in m && m.id !== undefined;
}
export function isNotification(m: JsonRpcMessage): m is JsonRpcNotification {
  return 'method' in m && !('id' in m && m.id !== undefined);
}
export function isResponse(m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m);
}

/** The text to put on the wire for a frame. */
export function serialize(frame: Frame): Wire {
  return frame.raw ?? JSON.stringify(frame.msg);
}

export function errorResponse(id: JsonRpcId | null, error: JsonRpcErrorObject): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error };
}

/**
 * A payload read, or why not. `answerTo`: the payload was an upstream's answer to that request,
 * unusable as it came (nested too deep): the request gets a failure instead of waiting.
 */
export type ParseOutcome = { ok: true; frames: Frame[]; batch: boolean } | { ok: false; error: JsonRpcResponse; answerTo?: JsonRpcId };

/** What a client payload may be: most messages in a batch, deepest nesting of arrays and objects. */
export interface ClientPayloadLimits {
  maxBatch: number;
  maxDepth: number;
}

/**
 * Parses one wire payload (a line, an HTTP body). Batches (JSON arrays, allowed by 2025-03-26)
 * yield several frames; their members lose `raw`, since only the whole payload had one text.
 * A member that is not a valid message fails the whole payload with -32600. `client` marks a
 * payload from a client: a batch of more than `maxBatch` messages is refused too, and so is a
 * document nested deeper than `maxDepth` (before anything else sees it: serializing such a value
 * again would overflow the stack), and what MCP servers drop without an answer (see
 * clientProblem), which would otherwise leave the request waiting for its timeout.
 */
export function parsePayload(text: string, client?: ClientPayloadLimits): ParseOutcome {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: errorResponse(null, { code: PARSE_ERROR, message: `Parse error: ${(err as Error).message}` }) };
  }
  if (client && nestsDeeperThan(value, client.maxDepth)) {
    // The id is readable (the parser does not recurse): the client hears which request failed.
    return invalid(
      Array.isArray(value) ? null : idOf(value),
      `the message nests arrays and objects more than ${client.maxDepth} levels deep (listen.maxJsonDepth)`,
    );
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return invalid(null, 'empty batch');
    if (client && value.length > client.maxBatch)
      return invalid(
        null,
        `a batch of ${value.length} messages is more than the ${client.maxBatch} ` +
          'this proxy takes at once (listen.maxBatchSize); send them in smaller batches',
      );
    const frames: Frame[] = [];
    for (const item of value) {
      const problem = checkMessage(item) ?? (client ? clientProblem(item as Record<string, unknown>) : undefined);
      if (problem) return invalid(idOf(item), problem);
      frames.push({ msg: item as JsonRpcMessage });
    }
    return { ok: true, frames, batch: true };
  }
  const problem = checkMessage(value) ?? (client ? clientProblem(value as Record<string, unknown>) : undefined);
  if (problem) return invalid(idOf(value), problem);
  return { ok: true, frames: [{ msg: value as JsonRpcMessage, raw: text }], batch: false };
}

/**
 * Parses an upstream's payload from its bytes, which the frames keep as their text when it is
 * UTF-8: an answer is read without decoding its result (envelope.ts), anything else is decoded
 * as usual. A payload nesting deeper than `maxDepth` (upstream.maxJsonDepth) is not a message:
 * writing it again would overflow the stack wherever the proxy does so. An answer that is not
 * usable (too deep, its result not JSON) names its request in `answerTo`.
 */
export function parseUpstream(bytes: Buffer, maxDepth: number): ParseOutcome {
  const answer = readAnswer(bytes, maxDepth);
  if (answer && 'frame' in answer) return { ok: true, frames: [answer.frame], batch: false };
  if (answer) return { ok: false, error: errorResponse(null, { code: INVALID_REQUEST, message: answer.why }), answerTo: answer.unusable };
  const parsed = parsePayload(bytes.toString('utf8'));
  if (!parsed.ok) return parsed;
  if (parsed.frames.some((f) => nestsDeeperThan(f.msg, maxDepth))) {
    const error = errorResponse(null, {
      code: INVALID_REQUEST,
      message: `The upstream's message nests arrays and objects more than ${maxDepth} levels deep (upstream.maxJsonDepth)`,
    });
    const msg = parsed.frames[0].msg;
    return !parsed.batch && isResponse(msg) && msg.id !== null ? { ok: false, error, answerTo: msg.id } : { ok: false, error };
  }
  // Bytes that are not UTF-8 are written anew from what they decoded to (replacement characters).
  if (!parsed.batch && isUtf8(bytes)) parsed.frames[0].raw = bytes;
  return parsed;
}

/**
 * Whether a parsed JSON value nests arrays and objects deeper than `max`: an iterative walk (the
 * parser itself does not recurse, but serializing the value again would), stopping at the first
 * level too deep. Cheaper than scanning the text: it visits values, not characters.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  // Pairs of (value, its depth), flattened: no allocation per visited value.
  const stack: unknown[] = [value, 1];
  while (stack.length > 0) {
    const depth = stack.pop() as number;
    const node = stack.pop() as object;
    if (depth > max) return true;
    if (Array.isArray(node)) {
      for (const child of node) if (typeof child === 'object' && child !== null) stack.push(child, depth + 1);
    } else {
      for (const key in node) {
        const child = (node as Record<string, unknown>)[key];
        if (typeof child === 'object' && child !== null) stack.push(child, depth + 1);
      }
    }
  }
  return false;
}

function invalid(id: JsonRpcId | null, why: string): ParseOutcome {
  return { ok: false, error: errorResponse(id, { code: INVALID_REQUEST, message: `Invalid Request: ${why}` }) };
}

function idOf(value: unknown): JsonRpcId | null {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

const MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);

/**
 * What JSON-RPC allows but MCP does not, and MCP servers (the official SDKs) drop without an
 * answer: members other than jsonrpc/id/method/params/result/error, an id that is not a string
 * or an integer, and params that are not an object. Checked on valid messages only.
 */
function clientProblem(m: Record<string, unknown>): string | undefined {
  for (const key in m)
    if (!MEMBERS.has(key)) return `unknown member "${key.slice(0, 64)}" (MCP messages have jsonrpc, id, method, params, result or error)`;
  if (typeof m.id === 'number' && !Number.isSafeInteger(m.id)) return '"id" must be a string or an integer';
  if ('method' in m && 'params' in m && !isObject(m.params)) return '"params" must be an object (MCP takes named parameters)';
  return undefined;
}

/** Returns why a value is not a JSON-RPC 2.0 message, or undefined when it is one. */
export function checkMessage(value: unknown): string | undefined {
  if (!isObject(value)) return 'a message must be a JSON object';
  const m = value;
  if (m.jsonrpc !== '2.0') return '"jsonrpc" must be exactly "2.0"';
  if ('id' in m && m.id !== undefined) {
    const id = m.id;
    if (typeof id !== 'string' && typeof id !== 'number' && !(id === null && !('method' in m))) {
      return '"id" must be a string or a number';
    }
  }
  if ('method' in m) {
    if (typeof m.method !== 'string' || m.method === '') return '"method" must be a non-empty string';
    if ('params' in m && m.params !== undefined && (typeof m.params !== 'object' || m.params === null)) {
      return '"params" must be an object or an array';
    }
    return undefined;
  }
  if (!('id' in m)) return 'a message needs "method" (request, notification) or "id" (response)';
  const hasResult = 'result' in m;
  const hasError = 'error' in m;
  if (hasResult === hasError) return 'a response needs exactly one of "result" and "error"';
  if (hasError) {
    const e = m.error as Record<string, unknown> | null;
    if (typeof e !== 'object' || e === null || typeof e.code !== 'number' || typeof e.message !== 'string') {
      return '"error" needs a numeric "code" and a string "message"';
    }
  }
  return undefined;
}
