/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) in front of servers that have
 * none, whatever their era: a modern `tools/call` still running after `answerWithinMs` becomes a
 * task (over a TaskCall: a legacy call or a passed-through modern one) the client polls
 * (`tasks/get`), answers (`tasks/update`: the upstream's input requests during the call become
 * the task's `inputRequests`) and cancels (`tasks/cancel`: cancelled upstream). A task id is
 * sealed: it names the task's random key, its principal and the replica that holds it (a request
 * for it elsewhere is forwarded there). A task runs at most `maxRunMs` (then it is cancelled
 * upstream and fails with TASK_TIMEOUT). A finished task keeps only its shaped result (or error),
 * counted against its client's share of listen.heldBytes, until `ttlMs` from its creation; past
 * the budget the oldest result goes first and its `tasks/get` says so. One client keeps at most
 * `perClient` tasks running, and tasks that hold an upstream session alone (their client may be
 * asked for input) at most a share of those sessions: per client and in all, so that calls whose
 * client waits for them always find one.
 */
import type { Logger } from 'pino';
import { randomUUID } from 'node:crypto';
import type { Held, HeldBytes } from '../../core/held-bytes.js';
import { modernUpstreamError, ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { isObject, type JsonRpcErrorObject, type JsonRpcNotification, type JsonRpcRequest } from '../../jsonrpc/message.js';
import type { RequestContext } from '../../mcp/request-context.js';
import type { Sealer } from '../../sealing/sealer.js';
import type { McpResult } from '../../transformers/contract.js';
import { declaresInput } from '../../upstream/pool.js';
import type { Owner } from './forward.js';
import type { InputRequests, InputResponses } from '../../mcp/input-round.js';
import type { CallOutcome } from '../../upstream/client.js';
import { CallAbort, type CallSignal } from '../../upstream/call-abort.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

export interface TasksOptions {
  sealer: Sealer;
  replicaId: string;
  replicaUrl(): string | undefined;
  /** How long a task is kept from its creation (its result too); a task still running then is cancelled. */
  ttlMs: number;
  /** Longest a task may run; then it is cancelled upstream and fails. */
  maxRunMs: number;
  /** How often clients are asked to poll. */
  pollIntervalMs: number;
  /** Most tasks one client (principal, or address without authentication) has running at once. */
  perClient: number;
  /** Most upstream sessions held alone by running tasks: of one client, and in all. */
  exclusive: { perClient: number; total: number };
  /** Where finished tasks' results are counted (listen.heldBytes). */
  held: HeldBytes;
  log: Logger;
}

/** A place reserved for a call that may become a task; `exclusive`: the call holds an upstream session alone. */
export interface TaskRoom {
  readonly exclusive: boolean;
  release(): void;
}

/** Finished tasks kept per client, in multiples of the tasks it may have running. */
const KEPT_PER_RUNNING = 4;

type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
const TERMINAL = new Set<TaskStatus>(['completed', 'failed', 'cancelled']);

/** What a sealed task id holds. */
interface TaskClaims {
  k: string;
  replica: string;
  url?: string;
  principal: string;
}

/** What a call that may ask for input comes to next: an input round for the client, or the upstream's outcome. */
export type CallStep = { kind: 'input'; inputRequests: InputRequests } | { kind: 'done'; outcome: CallOutcome };

/**
 * An upstream call a task runs, whatever the upstream: a legacy one on a pooled session
 * (PooledCall, pooled-call.ts) or a modern one passed through (PassedCall, passed-call.ts).
 */
export interface TaskCall {
  /** Waiting for the client's input, with no request under way upstream. */
  readonly awaitingInput: boolean;
  /** Settles once the call is over. */
  readonly done: Promise<void>;
  /** The next step: input the client must give, or the upstream's outcome. */
  next(): Promise<CallStep>;
  /** The client's answers go upstream; the call goes on under `cancellation`. */
  resume(responses: InputResponses, cancellation: CallSignal, onNotification: (n: JsonRpcNotification) => void): Promise<CallStep>;
  /** The call goes on as a task: `cancellation` alone cancels it, and it may take `timeoutMs` from now. */
  adopt(cancellation: CallSignal, onNotification: (n: JsonRpcNotification) => void, timeoutMs: number): void;
  /** Ends a call that waits for input nobody gave. */
  expire(): void;
  /** Ends the call, cancelled upstream with `reason`; `err` is its outcome. */
  stop(reason: string, err: ProxyError): void;
}

/** The finished call's result as the client gets it (reshaped by the request's filters). */
export type ShapeResult = (result: McpResult) => Promise<McpResult>;

class Task {
  readonly createdAt = new Date().toISOString();
  lastUpdatedAt = this.createdAt;
  status: TaskStatus = 'working';
  result: McpResult | undefined;
  error: JsonRpcErrorObject | undefined;
  inputRequests: InputRequests | undefined = undefined;
  cancelRequested = false;
  /** It ran past maxRunMs and was stopped. */
  overran = false;
  /** When the task is forgotten (ttlMs), and when it may run no longer (maxRunMs). */
  timer: NodeJS.Timeout | undefined;
  runTimer: NodeJS.Timeout | undefined;
  /** The finished task's result (or error) in listen.heldBytes. */
  held: Held | undefined;
  /** Hears each status change (status notifications to listeners). */
  onChange: ((task: Task) => void) | undefined;

  constructor(
    readonly id: string,
    readonly key: string,
    readonly principal: string,
    readonly clientKey: string,
    /**
     * While it runs: the call, what its result becomes for the client (the creating request's
     * filters), and what cancels it (its listeners hold the call). Let go of once it ends.
     */
    public run: { call: TaskCall; shape: ShapeResult; cancellation: CallAbort } | undefined,
    /** It holds an upstream session alone while it runs. */
    readonly exclusive: boolean,
  ) {}

  get terminal(): boolean {
    return TERMINAL.has(this.status);
  }

  set(status: TaskStatus): void {
    this.status = status;
    this.lastUpdatedAt = new Date().toISOString();
    this.onChange?.(this);
  }
}

export class Tasks {
  private readonly byKey = new Map<string, Task>();
  /** Each client's tasks, oldest first. */
  private readonly byClient = new Map<string, Set<Task>>();
  /** Places reserved for calls that may become tasks, by client: all of them, and those on a session alone. */
  private readonly reserved = new Map<string, { all: number; exclusive: number }>();
  /** Tasks running (or reserved) on an upstream session alone, of every client. */
  private exclusiveInUse = 0;
  /** Who hears each task's status changes (subscriptions/listen), by task key. */
  private readonly watchers = new Map<string, Set<(task: McpResult) => void>>();

  constructor(private readonly o: TasksOptions) {}

  /** Whether this request's client declared the extension (only then may a call become a task). */
  static declared(ctx: RequestContext): boolean {
    return isObject(ctx.capabilities.extensions) && ctx.capabilities.extensions[TASKS_EXTENSION] !== undefined;
  }

  /**
   * A place for a task of this client (a call that may become one), or undefined when it has
   * `perClient` running or about to, or when the call would hold an upstream session alone and
   * tasks hold their share of those already (the client's, or all of it). The place is given
   * back with `release` unless `start` takes it.
   */
  reserve(ctx: RequestContext): TaskRoom | undefined {
    const clientKey = ctx.clientKey ?? ctx.principal ?? '';
    // The same test the call's session is chosen by (tasks are tools/call, which may ask for input).
    const exclusive = declaresInput(ctx.capabilities);
    const reserved = this.reserved.get(clientKey) ?? { all: 0, exclusive: 0 };
    let running = reserved.all;
    let alone = reserved.exclusive;
    for (const task of this.byClient.get(clientKey) ?? []) {
      if (task.terminal) continue;
      running++;
      if (task.exclusive) alone++;
    }
    if (running >= this.o.perClient) return undefined;
    if (exclusive && (alone >= this.o.exclusive.perClient || this.exclusiveInUse >= this.o.exclusive.total)) return undefined;
    this.reserved.set(clientKey, { all: reserved.all + 1, exclusive: reserved.exclusive + (exclusive ? 1 : 0) });
    if (exclusive) this.exclusiveInUse++;
    let held = true;
    return {
      exclusive,
      release: () => {
        if (!held) return;
        held = false;
        const left = this.reserved.get(clientKey)!;
        if (exclusive) this.exclusiveInUse--;
        if (left.all > 1) this.reserved.set(clientKey, { all: left.all - 1, exclusive: left.exclusive - (exclusive ? 1 : 0) });
        else this.reserved.delete(clientKey);
      },
    };
  }

  /** Makes a call still running into a task (in the place `room` reserved); its next step is `pending`. Answers the CreateTaskResult. */
  start(call: TaskCall, pending: Promise<CallStep>, ctx: RequestContext, shape: ShapeResult, room: TaskRoom): McpResult {
    const principal = ctx.principal ?? '';
    const key = randomUUID();
    const claims: TaskClaims = { k: key, replica: this.o.replicaId, url: this.o.replicaUrl(), principal };
    const task = new Task(
      this.o.sealer.seal('task', claims),
      key,
      principal,
      ctx.clientKey ?? principal,
      { call, shape, cancellation: new CallAbort() },
      room.exclusive,
    );
    this.byKey.set(key, task);
    const mine = this.byClient.get(task.clientKey) ?? new Set();
    this.byClient.set(task.clientKey, mine.add(task));
    room.release(); // the task counts itself from now on
    if (task.exclusive) this.exclusiveInUse++;
    // The request that started the call is answered now: only the task cancels the call from here on.
    call.adopt(task.run!.cancellation, () => undefined, this.o.ttlMs);
    // A call that ends while it waits for input (cancelled, or no answer in time) has no step
    // waiting for it: fetch the outcome then.
    void call.done.then(() => {
      if (task.status === 'input_required') this.follow(task, call.next());
    });
    this.schedule(task);
    this.follow(task, pending);
    return { resultType: 'task', ...this.describe(task, false) };
  }

  /**
   * The task's timers (forgotten after ttlMs, stopped after maxRunMs: progress restarts the
   * call's own time limit, this one it cannot) and its listeners' hook. Made here, not in `start`:
   * a closure there would keep the call (and its result) alive for as long as the task is kept.
   */
  private schedule(task: Task): void {
    task.onChange = (t) => this.changed(t);
    task.timer = setTimeout(() => this.expire(task), this.o.ttlMs);
    task.timer.unref();
    const runMs = this.o.maxRunMs;
    if (runMs >= this.o.ttlMs) return; // forgotten by then anyway
    task.runTimer = setTimeout(() => this.overrun(task, runMs), runMs);
    task.runTimer.unref();
  }

  /** `tasks/get`: the task's state, with its result, error or input requests. */
  get(req: JsonRpcRequest, ctx: RequestContext): McpResult {
    return { resultType: 'complete', ...this.describe(this.find(req, ctx), true) };
  }

  /**
   * `tasks/update`: answers go upstream; keys not asked (or answered already) are ignored. A task
   * that still waits for other answers shows them before the ack.
   */
  async update(req: JsonRpcRequest, ctx: RequestContext): Promise<McpResult> {
    const task = this.find(req, ctx);
    const responses = req.params?.inputResponses;
    if (!isObject(responses))
      throw new ProxyError('INVALID_PARAMS', 'Invalid params: tasks/update needs inputResponses (an object keyed like inputRequests)');
    if (
      task.status === 'input_required' &&
      task.inputRequests &&
      Object.keys(task.inputRequests).some((k) => Object.hasOwn(responses, k))
    ) {
      task.inputRequests = undefined;
      task.set('working');
      const next = task.run!.call.resume(responses, task.run!.cancellation, () => undefined);
      this.follow(task, next);
      // A partial answer is asked again at once (see PooledCall.resume): let it show before the ack.
      await Promise.race([next, new Promise((resolve) => setImmediate(resolve))]);
    }
    return { resultType: 'complete' };
  }

  /** `tasks/cancel`: cancels the call upstream; a finished task is left as it is. */
  cancel(req: JsonRpcRequest, ctx: RequestContext): McpResult {
    const task = this.find(req, ctx);
    this.cancelTask(task);
    return { resultType: 'complete' };
  }

  /**
   * For `subscriptions/listen`: follows the task `taskId` names, when it is this principal's and
   * held here (undefined otherwise). `hear` gets the task as tasks/get shows it on each status
   * change; `now` is how it shows now.
   */
  watch(taskId: string, ctx: RequestContext, hear: (task: McpResult) => void): { now: McpResult; stop(): void } | undefined {
    const claims = this.o.sealer.open<TaskClaims>('task', taskId);
    const task = claims && claims.principal === (ctx.principal ?? '') ? this.byKey.get(claims.k) : undefined;
    if (!task) return undefined;
    const now = this.describe(task, true);
    if (task.terminal) return { now, stop: () => undefined }; // nothing changes any more
    const heard = this.watchers.get(task.key) ?? new Set();
    this.watchers.set(task.key, heard.add(hear));
    return {
      now,
      stop: () => {
        heard.delete(hear);
        if (heard.size === 0 && this.watchers.get(task.key) === heard) this.watchers.delete(task.key);
      },
    };
  }

  /** For a tasks/* request whose task another reachable replica holds: that replica. */
  ownerElsewhere(req: JsonRpcRequest, ctx: RequestContext): Owner | undefined {
    return this.ownerOf(req.params?.taskId, ctx);
  }

  /** The other reachable replica that holds the task `taskId` names, for the principal it was given to. */
  ownerOf(taskId: unknown, ctx: RequestContext): Owner | undefined {
    const claims = typeof taskId === 'string' ? this.o.sealer.open<TaskClaims>('task', taskId) : undefined;
    if (!claims || claims.replica === this.o.replicaId || !claims.url || claims.principal !== (ctx.principal ?? '')) return undefined;
    return { replica: claims.replica, url: claims.url, holds: 'task' };
  }

  close(): void {
    for (const task of this.byKey.values()) {
      clearTimeout(task.timer);
      clearTimeout(task.runTimer);
      this.cancelTask(task);
    }
  }

  private cancelTask(task: Task): void {
    if (task.terminal || task.cancelRequested || !task.run) return;
    task.cancelRequested = true;
    if (task.run.call.awaitingInput) task.run.call.expire();
    else task.run.cancellation.abort();
  }

  /** The task ran for maxRunMs: stopped upstream; it fails with TASK_TIMEOUT. */
  private overrun(task: Task, runMs: number): void {
    if (task.terminal || task.cancelRequested || !task.run) return;
    task.overran = true;
    this.o.log.info({ task: task.key.slice(0, 8), maxRunMs: runMs }, 'a task ran longer than it may; cancelled upstream');
    const message =
      `The task ran longer than ${runMs} ms (modern.tasks.maxRunMs) ` +
      'and was cancelled upstream; make the tool finish sooner, or raise the limit';
    task.run.call.stop(
      'The task ran longer than the proxy lets it (modern.tasks.maxRunMs)',
      new ProxyError('TASK_TIMEOUT', message, { maxRunMs: runMs }),
    );
  }

  /** Tells the task's watchers its new status; a finished task has no more to tell. */
  private changed(task: Task): void {
    const heard = this.watchers.get(task.key);
    if (!heard) return;
    if (task.terminal) this.watchers.delete(task.key);
    const detailed = this.describe(task, true);
    for (const hear of [...heard]) hear(detailed);
  }

  private follow(task: Task, pending: Promise<CallStep>): void {
    pending.then(
      (step) => this.apply(task, step),
      (err) => this.fail(task, toJsonRpcError(err, 'modern')),
    );
  }

  private async apply(task: Task, step: CallStep): Promise<void> {
    if (task.terminal || !task.run) return; // over, or forgotten (ttlMs) while it ran
    if (step.kind === 'input') {
      task.inputRequests = step.inputRequests;
      return task.set('input_required');
    }
    const { outcome } = step;
    if ('failure' in outcome) {
      if (task.cancelRequested && !task.overran) return this.finish(task, 'cancelled');
      return this.fail(task, toJsonRpcError(outcome.failure, 'modern'));
    }
    const res = outcome.response;
    if (res.error) return this.fail(task, modernUpstreamError(res.error));
    try {
      const shaped = withoutRelatedTask(await task.run.shape(res.result ?? {}));
      if (task.terminal || !task.run) return;
      task.result = shaped;
      this.finish(task, 'completed');
    } catch (err) {
      this.fail(task, toJsonRpcError(err, 'modern'));
    }
  }

  private fail(task: Task, error: JsonRpcErrorObject): void {
    if (task.terminal || !task.run) return;
    task.error = error;
    this.finish(task, 'failed');
  }

  private finish(task: Task, status: TaskStatus): void {
    task.inputRequests = undefined;
    task.set(status);
    this.o.log.debug({ task: task.key.slice(0, 8), status }, 'task finished');
    this.stopped(task);
    // Kept for the client to fetch: only the shaped result (or error), in the client's share of listen.heldBytes.
    const kept = task.result ?? task.error;
    if (kept)
      task.held = this.o.held.hold(task.clientKey, 'task_result', Buffer.byteLength(JSON.stringify(kept)), () => this.dropResult(task));
    // Finished tasks are kept for their TTL, but not without bound: a client's oldest go first.
    const mine = [...(this.byClient.get(task.clientKey) ?? [])].filter((t) => t.terminal);
    for (const old of mine.slice(0, Math.max(0, mine.length - this.o.perClient * KEPT_PER_RUNNING))) this.expire(old);
  }

  /** The task no longer runs: its call, its request's arguments and its share of sessions alone are let go of. */
  private stopped(task: Task): void {
    clearTimeout(task.runTimer);
    if (!task.run) return;
    task.run = undefined;
    if (task.exclusive) this.exclusiveInUse--;
  }

  /** The budget needs the room of this finished task's result: it goes, and tasks/get says so. */
  private dropResult(task: Task): void {
    this.o.log.info(
      { task: task.key.slice(0, 8) },
      "a finished task's result was dropped: its client held more than listen.heldBytes allows",
    );
    const message =
      'The task finished, but its result is no longer kept: its client held ' +
      'more than the proxy keeps for a client that is away (listen.heldBytes), ' +
      'and older results go first; fetch results sooner, or run the call again';
    task.result = undefined;
    task.error = toJsonRpcError(new ProxyError('HELD_BYTES_EXCEEDED', message), 'modern');
    task.held = undefined;
    task.set('failed');
  }

  /** The task's time is up: cancelled if still running, then forgotten. */
  private expire(task: Task): void {
    clearTimeout(task.timer);
    this.cancelTask(task);
    this.stopped(task);
    task.held?.release();
    this.byKey.delete(task.key);
    const mine = this.byClient.get(task.clientKey);
    mine?.delete(task);
    if (mine?.size === 0) this.byClient.delete(task.clientKey);
  }

  private claims(req: JsonRpcRequest): TaskClaims | undefined {
    const id = req.params?.taskId;
    return typeof id === 'string' ? this.o.sealer.open<TaskClaims>('task', id) : undefined;
  }

  /** The task a tasks/* request names, for its own principal only; -32602 for anything else. */
  private find(req: JsonRpcRequest, ctx: RequestContext): Task {
    const claims = this.claims(req);
    const task = claims && claims.principal === (ctx.principal ?? '') ? this.byKey.get(claims.k) : undefined;
    if (task) return task;
    if (claims && claims.principal === (ctx.principal ?? '') && claims.replica !== this.o.replicaId) {
      throw new ProxyError(
        'TASK_NOT_FOUND',
        `Failed to retrieve task: it is held by replica "${claims.replica}", ` +
          'which this one cannot reach (set replicas.url on every replica)',
      );
    }
    throw new ProxyError('TASK_NOT_FOUND', 'Failed to retrieve task: Task not found (unknown, expired, or issued to another client)');
  }

  private describe(task: Task, detailed: boolean): McpResult {
    const out: McpResult = {
      taskId: task.id,
      status: task.status,
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: this.o.ttlMs,
      pollIntervalMs: this.o.pollIntervalMs,
    };
    if (!detailed) return out;
    if (task.status === 'input_required' && task.inputRequests) out.inputRequests = task.inputRequests;
    if (task.status === 'completed') out.result = task.result;
    if (task.status === 'failed') {
      out.error = task.error;
      out.statusMessage = task.error?.message;
    }
    return out;
  }
}

/** A result as a task holds it: without the legacy related-task `_meta` a server may have put on it. */
function withoutRelatedTask(result: McpResult): McpResult {
  const meta = result._meta;
  if (!isObject(meta) || !(RELATED_TASK in meta)) return result;
  const { [RELATED_TASK]: _r, ...rest } = meta;
  return Object.keys(rest).length ? { ...result, _meta: rest } : (({ _meta: _m, ...r }) => r)(result);
}
