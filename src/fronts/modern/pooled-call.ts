/**
 * One modern call on a pooled legacy upstream session. When the upstream asks the client for
 * input during the call (elicitation/create, sampling/createMessage, roots/list), its requests
 * become an input round: the call waits and the client gets an `input_required` result with an
 * integrity-protected `requestState`; the client's retry carries the answers, which go upstream
 * as responses to the server's requests, and the call goes on. Requests arriving together are
 * asked together. A call whose round nobody answers is ended after `inputTimeoutMs` (the
 * upstream's requests answered, the call cancelled); the proxy never depends on a retry. While it
 * waits, the call's arguments and the input requests count against its client's share of
 * listen.heldBytes, and a round larger than `maxInputBytes` is not put to the client (every poll
 * of a task repeats it): the upstream's requests are answered with an error and the call goes on.
 */
import type { Logger } from 'pino';
import type { Held, HeldBytes } from '../../core/held-bytes.js';
import { ProxyError } from '../../jsonrpc/errors.js';
import {
  INTERNAL_ERROR,
  isObject,
  METHOD_NOT_FOUND,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from '../../jsonrpc/message.js';
import { capabilityFor, declares, INPUT_METHODS } from '../../mcp/eras.js';
import { INPUT_REQUEST_METHODS, type InputRequests, type InputResponses } from '../../mcp/input-round.js';
import type { RequestContext } from '../../mcp/request-context.js';
import type { CallOutcome, UpstreamClient } from '../../upstream/client.js';
import type { UpstreamLease } from '../../upstream/pool.js';
import { onAbort, type CallSignal } from '../../upstream/call-abort.js';
import type { CallStep } from './tasks.js';

/**
 * A legacy server cannot name its input requests; one that wants stable inputRequests keys may
 * put one in the request's `_meta` under this key (letters, digits, `_`, `-`, `.`; at most 64).
 */
export const INPUT_KEY_META = 'mcp-negotiate-proxy/inputKey';
const INPUT_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
/** Input requests the upstream sends within this window are asked in one round. */
const GATHER_MS = 10;

/** Who started the call (only they may resume it), what per-client limits count it against, and what they declared. */
export interface CallOptions extends Pick<RequestContext, 'principal' | 'clientKey' | 'capabilities'> {
  /** The call's name among the calls that may ask for input (and in its requestState). */
  key: string;
  method: string;
  params: Record<string, unknown> | undefined;
  timeoutMs: number;
  inputTimeoutMs: number;
  cancellation: CallSignal;
  /** Progress and log messages for whoever waits on the call now. */
  onNotification(n: JsonRpcNotification): void;
  /** The call is over (answered, failed or expired): forget it. */
  onForget(): void;
  /** No retry came within inputTimeoutMs. */
  onExpired?(): void;
  /** Where a waiting call's bytes are counted (its client's share of listen.heldBytes). */
  held: HeldBytes;
  /** Most bytes of input requests put to the client in one round. */
  maxInputBytes: number;
  log: Logger;
}

export class PooledCall {
  /** How many times the call has asked for input; a requestState names the round it answers. */
  round = 0;
  readonly key: string;
  readonly principal: string;
  readonly clientKey: string;
  /** Settles once the call is over (answered, failed or expired) and its upstream session released. */
  readonly done: Promise<void>;
  private settled!: () => void;
  /** Set while a client waits for the next step; a call waiting for input has none. */
  private waiter: ((step: CallStep) => void) | undefined;
  private readonly inputs = new Map<string, JsonRpcRequest>();
  private result: CallOutcome | undefined;
  private gather: NodeJS.Timeout | undefined;
  /** Waiting for the client's retry: the stream that asked may close without cancelling anything. */
  private waiting = false;
  private inputTimer: NodeJS.Timeout | undefined;
  /** The waiting call's place in listen.heldBytes. */
  private held: Held | undefined;
  private paramsBytes: number | undefined;
  private readonly client: UpstreamClient;
  private readonly id: JsonRpcId;
  private notify: (n: JsonRpcNotification) => void;
  private current: CallSignal;

  constructor(
    private readonly lease: UpstreamLease,
    private readonly opts: CallOptions,
  ) {
    this.client = lease.client;
    this.done = new Promise((resolve) => (this.settled = resolve));
    this.key = opts.key;
    this.principal = opts.principal;
    this.clientKey = opts.clientKey;
    this.notify = opts.onNotification;
    this.current = opts.cancellation;
    const call = this.client.request(
      opts.method,
      opts.params,
      { onNotification: (n) => this.notify(n), onServerRequest: (r) => this.onInput(r) },
      opts.timeoutMs,
    );
    this.id = call.id;
    this.watch(opts.cancellation);
    void call.outcome.then((o) => this.finish(o));
  }

  /** Waiting for the retry that answers round `round` (a retry already under way does not count). */
  get awaitingInput(): boolean {
    return this.waiting;
  }

  /** The next step of the call: input the client must give, or the upstream's outcome. */
  next(): Promise<CallStep> {
    return new Promise((resolve) => {
      this.waiter = resolve;
      if (this.result) return this.deliver({ kind: 'done', outcome: this.result });
      if (this.inputs.size && !this.gather) this.flush();
    });
  }

  /**
   * The client's retry: its answers go upstream and the call goes on under the retry's cancellation
   * and notification sink. Answers to keys never asked are ignored; keys left unanswered are asked again.
   */
  resume(responses: InputResponses, cancellation: CallSignal, onNotification: (n: JsonRpcNotification) => void): Promise<CallStep> {
    clearTimeout(this.inputTimer);
    this.stopWaiting();
    this.notify = onNotification;
    this.watch(cancellation);
    for (const [key, req] of this.inputs) {
      const answer = responses[key];
      if (!isObject(answer)) continue;
      this.client.respond(req.id, { result: answer });
      this.inputs.delete(key);
    }
    this.client.resume(this.id);
    return this.next();
  }

  /**
   * The call goes on as a task: `cancellation` alone cancels it from now on, its notifications go
   * to `onNotification`, and it may take `timeoutMs` from now (the task's time, not a request's).
   */
  adopt(cancellation: CallSignal, onNotification: (n: JsonRpcNotification) => void, timeoutMs: number): void {
    this.notify = onNotification;
    this.watch(cancellation);
    if (!this.result) this.client.retime(this.id, timeoutMs);
  }

  /** Ends a waiting call that no retry resumed: answers its input requests and cancels it upstream. */
  expire(): void {
    this.stop(
      'The client did not supply the requested input in time',
      new ProxyError('INPUT_TIMEOUT', 'The client did not supply the requested input in time'),
    );
  }

  /** Ends the call, waiting or not: its input requests answered, cancelled upstream with `reason`; `err` is its outcome. */
  stop(reason: string, err: ProxyError): void {
    this.stopWaiting(); // at once: nothing counts or resumes it while its session is let go of
    for (const req of this.inputs.values()) {
      if (req.method === 'elicitation/create') this.client.respond(req.id, { result: { action: 'cancel' } });
      else this.client.respond(req.id, { error: { code: INTERNAL_ERROR, message: 'The client did not answer in time' } });
    }
    this.inputs.clear();
    this.client.cancel(this.id, reason, err);
  }

  private watch(cancellation: CallSignal): void {
    this.current = cancellation;
    onAbort(cancellation, () => {
      // Only whoever waits now cancels: a finished round's stream may close freely.
      if (this.current === cancellation && !this.waiting && !this.result)
        this.client.cancel(this.id, 'The client cancelled the request', new ProxyError('CLIENT_GONE', 'The client cancelled the request'));
    });
  }

  private onInput(req: JsonRpcRequest): void {
    if (!INPUT_METHODS.has(this.opts.method) || !INPUT_REQUEST_METHODS.has(req.method)) {
      return this.client.respond(req.id, {
        error: { code: METHOD_NOT_FOUND, message: `${req.method} is not available during ${this.opts.method}` },
      });
    }
    const needed = capabilityFor(req.method, req.params)!;
    if (!declares(this.opts.capabilities, needed)) {
      this.client.respond(req.id, {
        error: { code: METHOD_NOT_FOUND, message: `The client did not declare the capability ${req.method} needs` },
      });
      const err = new ProxyError(
        'MISSING_CLIENT_CAPABILITY',
        `The upstream needs ${req.method}, which this request's client capabilities do not declare`,
        { requiredCapabilities: needed },
      );
      return this.client.cancel(this.id, 'The client lacks a capability the call needs', err);
    }
    this.inputs.set(this.keyFor(req), req);
    this.gather ??= setTimeout(() => {
      this.gather = undefined;
      this.flush();
    }, GATHER_MS);
  }

  /** The inputRequests key: the one the upstream names in `_meta` (see INPUT_KEY_META), else `<kind>-<id>`. */
  private keyFor(req: JsonRpcRequest): string {
    const named = (req.params?._meta as Record<string, unknown> | undefined)?.[INPUT_KEY_META];
    if (typeof named === 'string' && INPUT_KEY.test(named) && !this.inputs.has(named)) return named;
    return `${req.method.split('/')[0]}-${req.id}`;
  }

  /** Asks the waiting client for every pending input; the call waits upstream meanwhile. */
  private flush(): void {
    if (!this.waiter || this.inputs.size === 0 || this.result) return;
    const inputRequests: InputRequests = {};
    for (const [key, req] of this.inputs) inputRequests[key] = { method: req.method, params: inputParams(req.params) };
    const inputBytes = Buffer.byteLength(JSON.stringify(inputRequests));
    if (inputBytes > this.opts.maxInputBytes) return this.refuseInputs(inputBytes);
    this.client.hold(this.id);
    this.waiting = true;
    this.round++;
    this.inputTimer = setTimeout(() => {
      this.expire();
      this.opts.onExpired?.();
    }, this.opts.inputTimeoutMs);
    // Waiting, the call keeps its arguments and these input requests for a client that is away.
    this.paramsBytes ??= Buffer.byteLength(JSON.stringify(this.opts.params ?? {}));
    this.held = this.opts.held.hold(this.clientKey, 'input_round', this.paramsBytes + inputBytes, () => this.letGo());
    // Let go of at once (too large for the budget on its own): the failure reaches the waiter instead.
    if (this.held.dropped) return;
    this.deliver({ kind: 'input', inputRequests });
  }

  /** The round is too large to put to the client: the upstream's requests fail, and the call goes on without them. */
  private refuseInputs(bytes: number): void {
    const max = this.opts.maxInputBytes;
    this.opts.log.warn(
      { method: this.opts.method, bytes, maxInputRequestBytes: max },
      'the upstream asked the client for more input than one round may carry; its requests were answered with an error',
    );
    const message =
      `The proxy puts at most ${max} bytes of input requests to a modern ` +
      `client in one round (modern.maxInputRequestBytes); these took ${bytes}`;
    for (const req of this.inputs.values()) this.client.respond(req.id, { error: { code: INTERNAL_ERROR, message } });
    this.inputs.clear();
  }

  /** The budget needs the room of this waiting call: given up, as one nobody resumed. */
  private letGo(): void {
    this.opts.log.info(
      { method: this.opts.method, call: this.key.slice(0, 8) },
      "a call waiting for its client's input was given up: the client held more than listen.heldBytes allows",
    );
    const message =
      "The call waited for the client's input while the client held more than the " +
      'proxy keeps for it (listen.heldBytes), and was given up; send the request again';
    this.stop('The client did not come back for the input the call needs', new ProxyError('HELD_BYTES_EXCEEDED', message));
  }

  private stopWaiting(): void {
    this.waiting = false;
    this.held?.release();
    this.held = undefined;
  }

  private finish(outcome: CallOutcome): void {
    clearTimeout(this.gather);
    clearTimeout(this.inputTimer);
    this.stopWaiting();
    this.result = outcome;
    this.lease.release();
    this.opts.onForget();
    this.settled();
    if (this.waiter) this.deliver({ kind: 'done', outcome });
  }

  private deliver(step: CallStep): void {
    const waiter = this.waiter!;
    this.waiter = undefined;
    waiter(step);
  }
}

/** An upstream input request's params as a modern client may see them (no legacy task or elicitation ids). */
function inputParams(params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!params) return params;
  const { elicitationId: _e, task: _t, ...rest } = params;
  const meta = rest._meta as Record<string, unknown> | undefined;
  if (meta && ('io.modelcontextprotocol/related-task' in meta || INPUT_KEY_META in meta)) {
    const { 'io.modelcontextprotocol/related-task': _r, [INPUT_KEY_META]: _k, ...m } = meta;
    if (Object.keys(m).length) rest._meta = m;
    else delete rest._meta;
  }
  return rest;
}
