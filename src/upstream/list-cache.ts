/**
 * The upstream's answers to list requests (tools/list, prompts/list, resources/list,
 * resources/templates/list), kept for the clients that reach it through an upstream holding no
 * state of theirs: pooled sessions of a legacy server (modern requests, shared sessions) and a
 * 2026-07-28 server (modern requests passed through, bridged legacy sessions). It wraps an
 * UpstreamCall: a session of a client's own (core/relay.ts) never goes through it.
 *
 * An answer is kept under the method and the request's params (the cursor; in a 2026-07-28
 * request's `_meta`, the protocol version, the client's capabilities, its variant and anything
 * else but the keys that cannot change the answer: client info, log level, trace context), the
 * principal unless the server is declared stateless, and the `scope` of the upstream kind (a
 * pooled session's capabilities). What is kept is the upstream's answer, as bytes: each client
 * gets its own copy under its own id, shaped afterwards by its own filters. An answer leaves when
 * the upstream announces a change of its list, after `maxAgeMs` (or a 2026-07-28 server's own
 * ttlMs, when smaller: its cache hints are honoured), or to keep within `maxEntries` and
 * `maxBytes` (least recently used first).
 *
 * Identical requests under way share one upstream request; each waiter may leave (cancel) alone,
 * and the upstream request is cancelled once none waits. A failure, an error answer or an
 * answer that raced a list change is handed to those waiting, never kept.
 */
import type { Logger } from 'pino';
import { canonicalJson } from '../jsonrpc/canonical.js';
import { readAnswer, undecodedResult, withId } from '../jsonrpc/envelope.js';
import { isObject, type Frame, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../jsonrpc/message.js';
import { META } from '../mcp/eras.js';
import { CallAbort, onAbort } from './call-abort.js';
import type { CallOptions, Caller, UpstreamAnswer, UpstreamCall } from './call.js';

/** The requests whose answers are kept. */
export const LIST_METHODS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'] as const;
const LISTS = new Set<string>(LIST_METHODS);

/** The lists each list_changed notification says changed. */
const CHANGES: Record<string, readonly string[]> = {
  'notifications/tools/list_changed': ['tools/list'],
  'notifications/prompts/list_changed': ['prompts/list'],
  'notifications/resources/list_changed': ['resources/list', 'resources/templates/list'],
};

/** `_meta` keys that say nothing the answer may depend on: who the software is, which log messages it wants, its trace. */
const IGNORED_META = new Set<string>([META.clientInfo, META.logLevel, 'traceparent', 'tracestate']);
/** A request whose key would be longer than this (a long cursor, a large `_meta`) is not cached. */
const MAX_KEY_CHARS = 4096;
/** How deep a decoded answer may nest when it is kept as bytes (beyond upstream.maxJsonDepth's largest setting). */
const MAX_DEPTH = 1001;

export interface ListCacheOptions {
  /** How long an answer is kept at most; 0: nothing is. */
  maxAgeMs: number;
  maxEntries: number;
  maxBytes: number;
  /** The server keeps nothing one principal could see of another (upstream.stateless): answers are shared by every principal. */
  stateless: boolean;
  log: Logger;
}

/** Answers given from the cache (or from a request another client started), and those that cost an upstream request, per method. */
export interface ListCacheCounts {
  hit: number;
  miss: number;
}

interface Entry {
  method: string;
  /** The upstream's answer, undecoded (never handed out itself: each client gets a copy). */
  frame: Frame;
  bytes: number;
  /** When it was kept (ms since epoch), and until when. */
  stored: number;
  expires: number;
  /** The server's own ttlMs in it, if any: a copy handed out later says what is left of it. */
  ttlMs?: number;
}

interface Flight {
  /** The upstream's answer (its frame the one kept, when it is). */
  answer: Promise<UpstreamAnswer>;
  abort: CallAbort;
  waiters: number;
  /** The notifications of the call (a log message) go to everyone who waits on it. */
  listeners: Set<(frame: Frame) => void>;
}

export class ListCache {
  readonly counts: Record<string, ListCacheCounts> = Object.fromEntries(LIST_METHODS.map((m) => [m, { hit: 0, miss: 0 }]));
  private readonly entries = new Map<string, Entry>();
  private readonly flights = new Map<string, Flight>();
  /** Bumped by each change of a list: an answer to a request sent before it is not kept. */
  private readonly generations = new Map<string, number>();
  private bytes = 0;

  constructor(private readonly o: ListCacheOptions) {}

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /**
   * `upstream.call` through the cache: list requests made for a caller are answered from it (or
   * share one under way); any other call goes as it is. Every list change heard on a call's
   * notifications empties the list it names. `scope`: what else of the caller the upstream's
   * answer depends on (a pooled session's capabilities).
   */
  wrap(upstream: UpstreamCall, scope?: (caller: Caller) => unknown): UpstreamCall['call'] {
    return (req, o) => {
      const key = this.keyOf(req, o.caller, scope);
      if (key === undefined) return upstream.call(req, this.hearing(o));
      return this.answer(key, req, o, (signal, onNotification) => upstream.call(req, { ...o, signal, onNotification }));
    };
  }

  /** A notification the proxy heard from the upstream: a list change empties that list. */
  heard(n: JsonRpcNotification): void {
    const lists = CHANGES[n.method];
    if (!lists) return;
    for (const method of lists) {
      this.generations.set(method, (this.generations.get(method) ?? 0) + 1);
      let dropped = 0;
      for (const [key, entry] of this.entries) if (entry.method === method && this.drop(key, entry)) dropped++;
      this.o.log.debug({ method, dropped }, 'the upstream announced a list change: cached answers dropped');
    }
  }

  /** The options with the call's notifications watched for list changes. */
  private hearing(o: CallOptions): CallOptions {
    const notify = o.onNotification;
    return {
      ...o,
      onNotification: (frame) => {
        this.heard(frame.msg as JsonRpcNotification);
        notify?.(frame);
      },
    };
  }

  /** The request's key, or undefined when its answer is never kept. */
  private keyOf(req: JsonRpcRequest, caller: Caller | undefined, scope?: (caller: Caller) => unknown): string | undefined {
    if (this.o.maxAgeMs === 0 || !caller || !LISTS.has(req.method)) return undefined;
    const { _meta: meta, ...params } = req.params ?? {};
    let kept: Record<string, unknown> | undefined;
    if (isObject(meta)) {
      // Progress is the asking client's own: its request goes alone.
      if (meta.progressToken !== undefined) return undefined;
      for (const [name, value] of Object.entries(meta)) if (!IGNORED_META.has(name)) (kept ??= {})[name] = value;
    }
    const principal = this.o.stateless ? '' : caller.principal;
    const key = canonicalJson([req.method, principal, scope?.(caller) ?? null, params, kept ?? null]);
    return key.length <= MAX_KEY_CHARS ? key : undefined;
  }

  private answer(
    key: string,
    req: JsonRpcRequest,
    o: CallOptions,
    send: (signal: CallAbort, onNotification: (frame: Frame) => void) => Promise<UpstreamAnswer>,
  ): Promise<UpstreamAnswer> {
    const counts = this.counts[req.method];
    const entry = this.entries.get(key);
    if (entry && entry.expires > Date.now()) {
      counts.hit++;
      // Most recently used last: the first in the map goes first.
      this.entries.delete(key);
      this.entries.set(key, entry);
      this.o.log.debug({ method: req.method }, 'list answered from the cache');
      const frame = withId(entry.frame, req.id);
      return Promise.resolve({
        frame: entry.ttlMs === undefined ? frame : aged(frame, entry.ttlMs - (Date.now() - entry.stored)),
        status: 200,
      });
    }
    if (entry) this.drop(key, entry);
    let flight = this.flights.get(key);
    if (flight) counts.hit++;
    else {
      counts.miss++;
      flight = this.fly(key, req.method, send);
    }
    return this.wait(flight, req, o);
  }

  /** One upstream request for everyone who asks the same meanwhile; its answer kept when it may be. */
  private fly(
    key: string,
    method: string,
    send: (signal: CallAbort, onNotification: (frame: Frame) => void) => Promise<UpstreamAnswer>,
  ): Flight {
    const generation = this.generations.get(method) ?? 0;
    const abort = new CallAbort();
    const listeners = new Set<(frame: Frame) => void>();
    const answer = send(abort, (frame) => {
      this.heard(frame.msg as JsonRpcNotification);
      for (const listener of listeners) listener(frame);
    }).then(
      ({ frame, status }) => ({ frame: this.keep(key, method, frame, status, generation) ?? frame, status }),
      (err: unknown) => {
        this.o.log.debug({ method, err: (err as Error)?.message }, 'a list request failed: nothing cached');
        throw err;
      },
    );
    const flight: Flight = { answer, abort, waiters: 0, listeners };
    this.flights.set(key, flight);
    const land = () => {
      if (this.flights.get(key) === flight) this.flights.delete(key);
    };
    answer.then(land, land);
    this.o.log.debug({ method }, 'list not cached: asked the upstream');
    return flight;
  }

  /** The flight's answer for one request, under its id; rejects alone when its own signal aborts. */
  private wait(flight: Flight, req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    flight.waiters++;
    const listener = o.onNotification;
    if (listener) flight.listeners.add(listener);
    return new Promise((resolve, reject) => {
      let done = false;
      const leave = (): boolean => {
        if (done) return false;
        done = true;
        flight.waiters--;
        if (listener) flight.listeners.delete(listener);
        return true;
      };
      if (o.signal) {
        const signal = o.signal;
        onAbort(signal, () => {
          if (!leave()) return;
          // The last one waiting is gone: the upstream request is cancelled, and nobody new joins it.
          if (flight.waiters === 0) {
            for (const [key, f] of this.flights) if (f === flight) this.flights.delete(key);
            flight.abort.abort(signal.reason);
          }
          reject(signal.reason);
        });
      }
      flight.answer.then(
        ({ frame, status }) => leave() && resolve({ frame: withId(frame, req.id), status }),
        (err: unknown) => leave() && reject(err),
      );
    });
  }

  /**
   * Keeps a successful, complete answer that no list change overtook, within the budgets. The
   * undecoded frame (kept or not: waiters get copies of it), or undefined for an answer that is
   * not one (an error, another HTTP status), which waiters get as it came.
   */
  private keep(key: string, method: string, frame: Frame, status: number, generation: number): Frame | undefined {
    if (status !== 200) return undefined;
    const undecoded = undecodedResult(frame) ? frame : asBytes(frame.msg as JsonRpcResponse);
    if (!undecoded) return undefined;
    const kept = this.ageOf(undecoded);
    if (kept === undefined || (this.generations.get(method) ?? 0) !== generation) return undecoded;
    const bytes = (undecoded.raw as Buffer).length + key.length;
    if (bytes > this.o.maxBytes) {
      this.o.log.debug({ method, bytes, maxBytes: this.o.maxBytes }, 'list answer larger than upstream.listCache.maxBytes: not cached');
      return undecoded;
    }
    const old = this.entries.get(key);
    if (old) this.drop(key, old);
    const stored = Date.now();
    this.entries.set(key, { method, frame: undecoded, bytes, stored, expires: stored + kept.ageMs, ttlMs: kept.ttlMs });
    this.bytes += bytes;
    for (const [k, e] of this.entries) {
      if (this.entries.size <= this.o.maxEntries && this.bytes <= this.o.maxBytes) break;
      this.drop(k, e);
    }
    return undecoded;
  }

  /**
   * How long a result may be kept: maxAgeMs, or the server's ttlMs when smaller. A 2026-07-28 result (it has a
   * resultType) is kept only when complete and for no longer than its ttlMs (none means 0: never), and a private one
   * only under its principal; undefined when it may not be kept.
   */
  private ageOf(frame: Frame): { ageMs: number; ttlMs?: number } | undefined {
    const members = frame.result?.members ?? [];
    if (!members.includes('resultType') && !members.includes('ttlMs') && !members.includes('cacheScope'))
      return this.o.maxAgeMs > 0 ? { ageMs: this.o.maxAgeMs } : undefined;
    const { resultType, ttlMs, cacheScope } = JSON.parse(undecodedResult(frame)!.toString('utf8')) as Record<string, unknown>;
    if (resultType !== undefined && resultType !== 'complete') return undefined;
    if (cacheScope === 'private' && this.o.stateless) return undefined;
    const own = typeof ttlMs === 'number' && ttlMs >= 0 ? ttlMs : undefined;
    const ageMs = Math.min(own ?? (resultType === undefined ? this.o.maxAgeMs : 0), this.o.maxAgeMs);
    return ageMs > 0 ? { ageMs, ttlMs: own } : undefined;
  }

  private drop(key: string, entry: Entry): boolean {
    if (this.entries.get(key) !== entry) return false;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
    return true;
  }
}

/** A kept answer whose server said how long it may be kept, saying what is left of that (`leftMs`) as it is handed out. */
function aged(frame: Frame, leftMs: number): Frame {
  const msg = frame.msg as JsonRpcResponse;
  return { msg: { jsonrpc: '2.0', id: msg.id, result: { ...msg.result, ttlMs: Math.max(0, Math.floor(leftMs)) } } };
}

/** A decoded success answer as an undecoded one (its bytes, read again); undefined for an error. */
function asBytes(msg: JsonRpcResponse): Frame | undefined {
  if (msg.error || !isObject(msg.result)) return undefined;
  const read = readAnswer(Buffer.from(JSON.stringify(msg)), MAX_DEPTH);
  return read && 'frame' in read ? read.frame : undefined;
}
