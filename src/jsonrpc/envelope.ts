/**
 * Reads an upstream's answer from its bytes without decoding it. Most answers are relayed as the
 * upstream sent them, so the proxy only needs their id: the envelope is read, the result is
 * proven one JSON object by a strict scan (strict-json.ts: about twice what counting its
 * brackets cost, less than decoding it), and its bytes are decoded when something asks
 * for `msg.result` (a filter that reshapes it, the proxy's own request). An answer a client is
 * slow to read is then held once, as bytes.
 */
import { isUtf8 } from 'node:buffer';
import type { Frame, JsonRpcId, JsonRpcResponse } from './message.js';
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  scanValue,
  skipSpace,
  TOO_DEEP,
} from './strict-json.js';

const JSONRPC_2 = Buffer.from('"2.0"');

/**
 * What reading an answer's envelope gave: the answer as a lazy frame, or the request it answered unusably (not
 * JSON, or nested deeper than allowed).
 */
export type Answer = { frame: Frame } | { unusable: JsonRpcId; why: string };

/**
 * A success response `{"jsonrpc":"2.0","id":…,"result":{…}}` (members in any order, no others)
 * whose result a strict scan proved one JSON object nesting at most `maxDepth` levels (the
 * envelope counts as one), as a frame whose result is decoded on first use; the request it
 * answered when its result is not so; undefined for anything else, which the caller decodes.
 */
export function readAnswer(bytes: Buffer, maxDepth: number): Answer | undefined {
  if (!isUtf8(bytes)) return undefined; // decoded, with replacement characters, by the caller
  const envelope = readEnvelope(bytes, maxDepth);
  if (!envelope) return undefined;
  const { id, result } = envelope;
  if (typeof result === 'string') return { unusable: id, why: result };
  return { frame: { msg: lazyAnswer(id, bytes), raw: bytes, result } };
}

/**
 * An answer whose `result` is decoded from `bytes` (the whole answer, proven JSON) on first use.
 * An object literal with a getter: the hot path builds one per answer, and `defineProperty` on a
 * fresh object costs several times more.
 */
export function lazyAnswer(id: JsonRpcId, bytes: Buffer): JsonRpcResponse {
  return {
    jsonrpc: '2.0',
    id,
    get result() {
      const result = (JSON.parse(bytes.toString('utf8')) as JsonRpcResponse).result;
      Object.defineProperty(this, 'result', { value: result, enumerable: true, configurable: true, writable: true });
      return result;
    },
  };
}

/** The bytes of a lazy frame's result (an object) while nothing has decoded it; undefined after, or for any other frame. */
export function undecodedResult(frame: Frame): Buffer | undefined {
  if (!frame.result || typeof frame.raw === 'string' || !Object.getOwnPropertyDescriptor(frame.msg, 'result')?.get) return undefined;
  return frame.raw?.subarray(frame.result.start, frame.result.end);
}

/** The same answer under another id (the proxy's own on a shared pipe, back to the caller's); one still undecoded stays so. */
export function withId(frame: Frame, id: JsonRpcId): Frame {
  const result = undecodedResult(frame);
  if (!result) return { msg: { ...(frame.msg as JsonRpcResponse), id } };
  const head = Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`);
  const bytes = Buffer.concat([head, result, CLOSE]);
  return {
    msg: lazyAnswer(id, bytes),
    raw: bytes,
    result: { start: head.length, end: head.length + result.length, members: frame.result!.members },
  };
}

const CLOSE = Buffer.from('}');

/** Where an undecoded answer's result lies in its bytes, and the names of its own members (each as it reads). */
export interface ResultSpan {
  start: number;
  end: number;
  members: string[];
}

/** The envelope's id and where its result lies, or why the result cannot be used; undefined when this is no success response. */
function readEnvelope(b: Buffer, maxDepth: number): { id: JsonRpcId; result: ResultSpan | string } | undefined {
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return undefined;
  let id: JsonRpcId | undefined;
  let version = false;
  let result: ResultSpan | string | undefined;
  i = skipSpace(b, i + 1);
  for (;;) {
    if (b[i] !== QUOTE) return undefined;
    const keyEnd = stringEnd(b, i);
    if (keyEnd < 0) return undefined;
    const key = keyOf(b, i + 1, keyEnd - 1);
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return undefined;
    i = skipSpace(b, i + 1);
    if (key === JSONRPC && !version && i + 5 <= b.length && b.compare(JSONRPC_2, 0, 5, i, i + 5) === 0) {
      version = true;
      i += 5;
    } else if (key === ID && id === undefined) {
      const end = b[i] === QUOTE ? stringEnd(b, i) : numberEnd(b, i);
      if (end <= i) return undefined;
      id = idOf(b, i, end);
      if (id === undefined) return undefined;
      i = end;
    } else if (key === RESULT && result === undefined && b[i] === OPEN_OBJECT) {
      const members: string[] = [];
      const end = scanValue(b, i, maxDepth - 1, members); // the envelope is the first level
      if (end >= 0) {
        result = { start: i, end, members };
        i = end;
      } else {
        // Not usable; its brackets may still balance, and an id after it name the request it fails.
        result =
          end === TOO_DEEP
            ? `The upstream's answer nests arrays and objects more than ${maxDepth} levels deep (upstream.maxJsonDepth)`
            : "The upstream's answer is not valid JSON";
        i = balancedEnd(b, i);
        if (i < 0) return undefined;
      }
    } else return undefined;
    i = skipSpace(b, i);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    if (b[i] !== CLOSE_OBJECT || skipSpace(b, i + 1) !== b.length) return undefined;
    return version && result !== undefined && id !== undefined ? { id, result } : undefined;
  }
}

const JSONRPC = 1;
const ID = 2;
const RESULT = 3;
const KEYS: [number, Buffer][] = [
  [JSONRPC, Buffer.from('jsonrpc')],
  [ID, Buffer.from('id')],
  [RESULT, Buffer.from('result')],
];

/** Which of the three members a key (its bytes between the quotes) names, or 0. */
function keyOf(b: Buffer, start: number, end: number): number {
  next: for (const [key, bytes] of KEYS) {
    if (bytes.length !== end - start) continue;
    for (let k = 0; k < bytes.length; k++) if (b[start + k] !== bytes[k]) continue next;
    return key;
  }
  return 0;
}

function idOf(b: Buffer, start: number, end: number): JsonRpcId | undefined {
  // Small integers, the usual ids, without a string in between.
  if (end - start < 16 && b[start] !== 0x30) {
    let n = 0;
    for (let k = start; k < end; k++) {
      const digit = b[k] - 0x30;
      if (digit < 0 || digit > 9) return idOfText(b.toString('utf8', start, end));
      n = n * 10 + digit;
    }
    return n;
  }
  return idOfText(b.toString('utf8', start, end));
}

function idOfText(text: string): JsonRpcId | undefined {
  try {
    const id: unknown = JSON.parse(text);
    return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : undefined;
  } catch {
    return undefined;
  }
}

function numberEnd(b: Buffer, i: number): number {
  // The characters a JSON number is made of; JSON.parse then checks their order.
  for (let c = b[i]; (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45; c = b[++i]);
  return i;
}

/**
 * The index after the string that opens at `start`, or -1 when it does not close (its contents are not checked:
 * the envelope's keys and id are compared or decoded after).
 */
function stringEnd(b: Buffer, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = b.indexOf(QUOTE, from);
    if (quote < 0) return -1;
    let slashes = 0;
    while (b[quote - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The index after the object or array that opens at `start`, or -1 when its brackets do not balance (nothing else is checked). */
function balancedEnd(b: Buffer, start: number): number {
  const closers: number[] = [];
  for (let i = start; i < b.length; i++) {
    const c = b[i];
    if (c === QUOTE) {
      const end = stringEnd(b, i);
      if (end < 0) return -1;
      i = end - 1;
    } else if (c === OPEN_OBJECT) closers.push(CLOSE_OBJECT);
    else if (c === OPEN_ARRAY) closers.push(CLOSE_ARRAY);
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (closers.pop() !== c) return -1;
      if (closers.length === 0) return i + 1;
    }
  }
  return -1;
}
