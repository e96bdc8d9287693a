/**
 * Input rounds for modern calls to a legacy upstream: each call runs as a PooledCall on a pooled
 * session (alone on it when it may ask the client for input), kept under a random key; when the
 * upstream asks, the client gets `input_required` with a sealed `requestState` naming the call,
 * bound to the request, the round, the principal and the replica. A retry with that state resumes
 * the call. One client keeps at most `parkedPerClient` calls waiting for its input.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { HeldBytes } from '../../core/held-bytes.js';
import { canonicalJson } from '../../jsonrpc/canonical.js';
import { ProxyError } from '../../jsonrpc/errors.js';
import { isObject, type JsonRpcNotification, type JsonRpcRequest } from '../../jsonrpc/message.js';
import { declares, INPUT_METHODS, passesLogLevel } from '../../mcp/eras.js';
import type { RequestContext } from '../../mcp/request-context.js';
import type { Sealer } from '../../sealing/sealer.js';
import type { McpResult } from '../../transformers/contract.js';
import { declaresInput, type UpstreamPool } from '../../upstream/pool.js';
import type { Owner } from './forward.js';
import { PooledCall } from './pooled-call.js';
import type { CallStep } from './tasks.js';
import type { InputRequests } from '../../mcp/input-round.js';
import type { ModernReply } from './reply.js';

export interface InputRoundsOptions {
  pool: UpstreamPool;
  requestTimeoutMs: number;
  /** How long a call waiting for client input waits for the retry. */
  inputTimeoutMs: number;
  /** Most calls of one client waiting for its input at once (modern.parkedPerClient). */
  parkedPerClient: number;
  /** Where waiting calls' bytes are counted, per client and in total (listen.heldBytes). */
  held: HeldBytes;
  /** Most bytes of input requests put to the client in one round (modern.maxInputRequestBytes). */
  maxInputRequestBytes: number;
  /** Seals `requestState` (shared by replicas when they share a secret). */
  sealer: Sealer;
  /** This replica's name, sealed into requestState so another replica can say where the call waits. */
  replicaId: string;
  /** Where other replicas reach this one (sealed into requestState, for forwarded retries); known once listening. */
  replicaUrl(): string | undefined;
  log: Logger;
}

/** What a requestState holds: the waiting call, the round it answers, what it is bound to, and where it waits. */
interface RequestState {
  call: string;
  round: number;
  /** The request's method and a digest of its arguments: a state fits only the request that got it. */
  method: string;
  digest: string;
  /** Expiry, ms since the epoch. */
  exp: number;
  replica: string;
  /** Where that replica takes forwarded retries. */
  url?: string;
  /** Who got it: nobody else may resume the call. */
  principal: string;
  /**
   * After an upstream's -32042 no call waits: the keys of the URL elicitations the client must
   * accept before the request is sent upstream again.
   */
  again?: string[];
}

/** More URL elicitations than this in one -32042 are not bridged (the error is relayed as it is). */
const MAX_URL_ELICITATIONS = 16;

/** A call's next step, or, past the time it had to answer in, the step still to come (it then becomes a task). */
export type RunStep = CallStep | { kind: 'running'; next: Promise<CallStep> };
export type CallRun = { call: PooledCall; step: RunStep };

export class InputRounds {
  /** Calls under way that may ask for input, by their random key (what a requestState names). */
  private readonly calls = new Map<string, PooledCall>();

  constructor(private readonly o: InputRoundsOptions) {}

  /** Starts a call upstream; its first step (input to ask for, or the outcome; or, given `answerWithinMs`, the step still to come). */
  async start(
    method: string,
    params: Record<string, unknown>,
    ctx: RequestContext,
    reply: ModernReply,
    answerWithinMs?: number,
  ): Promise<CallRun> {
    const principal = ctx.principal ?? '';
    const client = ctx.clientKey ?? principal;
    // A call that may ask for input gets a session of its own: the upstream's request then belongs to it alone.
    const exclusive = INPUT_METHODS.has(method) && declaresInput(ctx.capabilities);
    // A call that may ask for input frees its client's oldest waiting one first, so it finds a session.
    if (exclusive) await this.trim(client, this.o.parkedPerClient - 1);
    const lease = await this.o.pool.acquire({ principal, clientKey: client, capabilities: ctx.capabilities }, exclusive);
    if (reply.cancellation.aborted) {
      lease.release();
      throw new ProxyError('CLIENT_GONE', 'The client cancelled the request before it reached the upstream');
    }
    // Random, never a counter: a requestState from before a restart names no call of this one.
    // randomUUID draws from a pooled entropy buffer: no system call per request.
    const key = randomUUID();
    const call = new PooledCall(lease, {
      key,
      principal,
      clientKey: client,
      method,
      params,
      capabilities: ctx.capabilities,
      timeoutMs: this.o.requestTimeoutMs,
      inputTimeoutMs: this.o.inputTimeoutMs,
      cancellation: reply.cancellation,
      onNotification: logFilter(ctx, reply),
      onForget: () => this.calls.delete(key),
      onExpired: () =>
        this.o.log.info(
          { method, call: key, inputTimeoutMs: this.o.inputTimeoutMs },
          'a call waiting for client input got no retry in time; cancelled upstream',
        ),
      held: this.o.held,
      maxInputBytes: this.o.maxInputRequestBytes,
      log: this.o.log,
    });
    this.calls.set(key, call);
    return { call, step: await within(call.next(), answerWithinMs) };
  }

  /** The call goes on as a task: no requestState resumes it, and it counts no more against its client's waiting calls. */
  release(call: PooledCall): void {
    this.calls.delete(call.key);
  }

  /** The round the call asks: what the client must supply, with the state that resumes the call. */
  ask(req: JsonRpcRequest, ctx: RequestContext, call: PooledCall, step: Extract<CallStep, { kind: 'input' }>): McpResult {
    // Calls started together may all reach this point: the cap holds here, whatever raced before.
    void this.trim(call.clientKey, this.o.parkedPerClient, call);
    const state: RequestState = {
      call: call.key,
      round: call.round,
      ...binding(req),
      exp: Date.now() + this.o.inputTimeoutMs,
      replica: this.o.replicaId,
      url: this.o.replicaUrl(),
      principal: ctx.principal ?? '',
    };
    const requestState = this.o.sealer.seal('requestState', state);
    return { resultType: 'input_required', inputRequests: step.inputRequests, requestState };
  }

  /**
   * An upstream's -32042 (URL elicitation required) as an input round: the client is asked to
   * open each URL, and its retry that accepts them all sends the request upstream again (see
   * `resume`). Undefined when the error carries no URL elicitations to ask for.
   */
  urlRound(req: JsonRpcRequest, ctx: RequestContext, data: unknown): McpResult | undefined {
    const elicitations = (data as { elicitations?: unknown } | undefined)?.elicitations;
    if (!Array.isArray(elicitations) || elicitations.length === 0 || elicitations.length > MAX_URL_ELICITATIONS) return undefined;
    const inputRequests: InputRequests = {};
    for (const [i, e] of elicitations.entries()) {
      if (!isObject(e) || typeof e.url !== 'string' || typeof e.message !== 'string') return undefined;
      inputRequests[`url-${i + 1}`] = { method: 'elicitation/create', params: { mode: 'url', url: e.url, message: e.message } };
    }
    const needed = { elicitation: { url: {} } };
    if (!declares(ctx.capabilities, needed)) {
      throw new ProxyError(
        'MISSING_CLIENT_CAPABILITY',
        "The upstream needs the user to open a URL (URL-mode elicitation), which this request's client capabilities do not declare",
        { requiredCapabilities: needed },
      );
    }
    const state: RequestState = {
      call: '',
      round: 0,
      ...binding(req),
      exp: Date.now() + this.o.inputTimeoutMs,
      replica: this.o.replicaId,
      principal: ctx.principal ?? '',
      again: Object.keys(inputRequests),
    };
    return { resultType: 'input_required', inputRequests, requestState: this.o.sealer.seal('requestState', state) };
  }

  /**
   * The client's retry with `requestState` and `inputResponses`: the waiting call goes on; throws
   * when nothing may resume. After a URL round no call waits: `again` when the client accepted
   * every URL (the request is to be sent again), `declined` otherwise.
   */
  async resume(
    req: JsonRpcRequest,
    ctx: RequestContext,
    reply: ModernReply,
    answerWithinMs?: number,
  ): Promise<CallRun | 'again' | 'declined'> {
    const params = req.params!;
    const state = this.openState(req, ctx);
    if (state.again) {
      const responses = params.inputResponses;
      return isObject(responses) && state.again.every((key) => isObject(responses[key]) && responses[key].action === 'accept')
        ? 'again'
        : 'declined';
    }
    if (state.replica !== this.o.replicaId) {
      throw invalidState(
        `The call this requestState resumes waits on replica "${state.replica}", which this one cannot ` +
          'forward to (set replicas.url on every replica): send the request again without requestState',
      );
    }
    const call = this.calls.get(state.call);
    if (!call || call.principal !== state.principal || call.round !== state.round || !call.awaitingInput) {
      throw invalidState(
        'No call is waiting for this requestState (it finished, timed out, ' +
          'or was answered already): send the request again without requestState',
      );
    }
    const responses = params.inputResponses;
    if (!isObject(responses)) {
      throw invalidState('Invalid params: a retry with requestState needs inputResponses (an object keyed like inputRequests)');
    }
    return { call, step: await within(call.resume(responses, reply.cancellation, logFilter(ctx, reply)), answerWithinMs) };
  }

  /** The retry's requestState, checked: its seal, its request, its principal and its time; throws otherwise. */
  private openState(req: JsonRpcRequest, ctx: RequestContext): RequestState {
    const token = req.params?.requestState;
    if (typeof token !== 'string') throw invalidState('Invalid params: requestState must be the string the server sent');
    const state = this.o.sealer.open<RequestState>('requestState', token);
    const bound = binding(req);
    if (!state || state.method !== bound.method || state.digest !== bound.digest) {
      throw invalidState(
        'requestState is not valid for this request: it was altered, ' +
          'belongs to another request, or was issued by a proxy with another secret',
      );
    }
    if (state.principal !== (ctx.principal ?? ''))
      throw invalidState('requestState was issued to another client identity: send the request again without requestState');
    if (!(state.exp > Date.now()))
      throw invalidState('requestState has expired: send the request again without requestState and inputResponses');
    return state;
  }

  /**
   * For a retry whose call waits on another replica that can be reached: that replica. Anything
   * else (no requestState, not valid, this replica's own, no URL) is left to `resume`.
   */
  ownerElsewhere(req: JsonRpcRequest, ctx: RequestContext): Owner | undefined {
    const token = req.params?.requestState;
    if (typeof token !== 'string') return undefined;
    const state = this.o.sealer.open<RequestState>('requestState', token);
    if (!state || state.again || state.replica === this.o.replicaId || !state.url || state.principal !== (ctx.principal ?? ''))
      return undefined;
    return { replica: state.replica, url: state.url, holds: 'call' };
  }

  close(): void {
    for (const call of [...this.calls.values()]) call.expire();
  }

  /**
   * Keeps at most `keep` of a client's calls waiting for its input (besides `spare`), giving up
   * the oldest (most likely abandoned: its requestState then resumes nothing). Resolves once
   * their upstream sessions are free.
   */
  private async trim(client: string, keep: number, spare?: PooledCall): Promise<void> {
    const waiting: PooledCall[] = [];
    // In the order they started.
    for (const call of this.calls.values()) if (call.clientKey === client && call.awaitingInput && call !== spare) waiting.push(call);
    const over = waiting.slice(0, Math.max(0, waiting.length - keep));
    for (const call of over) {
      this.o.log.info(
        { call: call.key.slice(0, 8), parkedPerClient: this.o.parkedPerClient },
        'a client has more calls waiting for its input than it may; its oldest is given up',
      );
      call.expire();
    }
    await Promise.all(over.map((call) => call.done));
  }
}

/** The step, or `running` when it takes longer than `ms` (no limit without `ms`; with 0, running at once, whatever comes first). */
async function within(next: Promise<CallStep>, ms: number | undefined): Promise<RunStep> {
  if (ms === undefined) return next;
  if (ms <= 0) return { kind: 'running', next };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<RunStep>((resolve) => (timer = setTimeout(() => resolve({ kind: 'running', next }), ms)));
  try {
    return await Promise.race([next, late]);
  } finally {
    clearTimeout(timer);
  }
}

function invalidState(message: string): ProxyError {
  return new ProxyError('INVALID_REQUEST_STATE', message);
}

/** What a requestState is bound to: the method and a digest of its arguments. */
function binding(req: JsonRpcRequest): { method: string; digest: string } {
  const { _meta: _m, inputResponses: _i, requestState: _r, ...rest } = req.params ?? {};
  return { method: req.method, digest: createHash('sha256').update(canonicalJson(rest)).digest('base64url') };
}

/** Progress always; `notifications/message` only at or above the request's log level (none without one). */
function logFilter(ctx: RequestContext, reply: ModernReply): (n: JsonRpcNotification) => void {
  return (n) => {
    if (passesLogLevel(n, ctx.logLevel)) reply.notify(n);
  };
}
