/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) in front of servers that have
 * none: a modern `tools/call` still running after `answerWithinMs` becomes a task the client
 * polls (`tasks/get`), answers (`tasks/update`: the legacy server's sampling, elicitation and
 * roots requests during the call become the task's `inputRequests`) and cancels (`tasks/cancel`:
 * cancelled upstream). A task id is sealed: it names the task's random key, its principal and the
 * replica that holds it (a request for it elsewhere is forwarded there). A finished task keeps its
 * result until `ttlMs` from its creation; one client keeps at most `perClient` tasks running.
 */
import type { Logger } from 'pino';
import { randomUUID } from 'node:crypto';
import { modernUpstreamError, ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { isObject, type JsonRpcErrorObject, type JsonRpcRequest } from '../../jsonrpc/message.js';
import type { ModernContext } from '../../mcp/eras.js';
import type { Sealer } from '../../sealing/sealer.js';
import type { McpResult } from '../../transformers/contract.js';
import type { Owner } from './forward.js';
import type { BridgedCall, CallStep, InputRequests } from './mrtr.js';
import { Cancellation } from './reply.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

export interface TasksOptions {
  sealer: Sealer;
  replicaId: string;
  replicaUrl(): string | undefined;
  /** How long a task is kept from its creation (its result too); a task still running then is cancelled. */
  ttlMs: number;
  /** How often clients are asked to poll. */
  pollIntervalMs: number;
  /** Most tasks one client (principal, or address without authentication) has running at once. */
  perClient: number;
  log: Logger;
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
  readonly cancellation = new Cancellation();
  timer: NodeJS.Timeout | undefined;
  /** Hears each status change (status notifications to listeners). */
  onChange: ((task: Task) => void) | undefined;

  constructor(
    readonly id: string,
    readonly key: string,
    readonly principal: string,
    readonly clientKey: string,
    readonly call: BridgedCall,
    /** What the finished call's result becomes for the client (the creating request's filters). */
    readonly shape: ShapeResult,
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
  /** Places reserved for calls that may become tasks, by client. */
  private readonly reserved = new Map<string, number>();
  /** Who hears each task's status changes (subscriptions/listen), by task key. */
  private readonly watchers = new Map<string, Set<(task: McpResult) => void>>();

  constructor(private readonly o: TasksOptions) {}

  /** Whether this request's client declared the extension (only then may a call become a task). */
  static declared(ctx: ModernContext): boolean {
    return isObject(ctx.clientCapabilities.extensions) && ctx.clientCapabilities.extensions[TASKS_EXTENSION] !== undefined;
  }

  /**
   * A place for a task of this client (a call that may become one), or undefined when it has
   * `perClient` running or about to. The place is given back with `release` unless `start`
   * takes it.
   */
  reserve(ctx: ModernContext): { release(): void } | undefined {
    const clientKey = ctx.client ?? ctx.principal ?? '';
    let running = this.reserved.get(clientKey) ?? 0;
    for (const task of this.byClient.get(clientKey) ?? []) if (!task.terminal) running++;
    if (running >= this.o.perClient) return undefined;
    this.reserved.set(clientKey, (this.reserved.get(clientKey) ?? 0) + 1);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        const left = (this.reserved.get(clientKey) ?? 1) - 1;
        if (left > 0) this.reserved.set(clientKey, left);
        else this.reserved.delete(clientKey);
      },
    };
  }

  /** Makes a call still running into a task (in the place `room` reserved); its next step is `pending`. Answers the CreateTaskResult. */
  start(call: BridgedCall, pending: Promise<CallStep>, ctx: ModernContext, shape: ShapeResult, room: { release(): void }): McpResult {
    const principal = ctx.principal ?? '';
    const key = randomUUID();
    const claims: TaskClaims = { k: key, replica: this.o.replicaId, url: this.o.replicaUrl(), principal };
    const task = new Task(this.o.sealer.seal('task', claims), key, principal, ctx.client ?? principal, call, shape);
    task.onChange = (t) => this.changed(t);
    this.byKey.set(key, task);
    const mine = this.byClient.get(task.clientKey) ?? new Set();
    this.byClient.set(task.clientKey, mine.add(task));
    room.release(); // the task counts itself from now on
    // The request that started the call is answered now: only the task cancels the call from here on.
    call.adopt(task.cancellation, () => undefined, this.o.ttlMs);
    // A call that ends while it waits for input (cancelled, or no answer in time) has no step
    // waiting for it: fetch the outcome then.
    void call.done.then(() => {
      if (task.status === 'input_required') this.follow(task, call.next());
    });
    task.timer = setTimeout(() => this.expire(task), this.o.ttlMs);
    task.timer.unref();
    this.follow(task, pending);
    return { resultType: 'task', ...this.describe(task, false) };
  }

  /** `tasks/get`: the task's state, with its result, error or input requests. */
  get(req: JsonRpcRequest, ctx: ModernContext): McpResult {
    return { resultType: 'complete', ...this.describe(this.find(req, ctx), true) };
  }

  /**
   * `tasks/update`: answers go upstream; keys not asked (or answered already) are ignored. A task
   * that still waits for other answers shows them before the ack.
   */
  async update(req: JsonRpcRequest, ctx: ModernContext): Promise<McpResult> {
    const task = this.find(req, ctx);
    const responses = req.params?.inputResponses;
    if (!isObject(responses)) throw new ProxyError('INVALID_PARAMS', 'Invalid params: tasks/update needs inputResponses (an object keyed like inputRequests)');
    if (task.status === 'input_required' && task.inputRequests && Object.keys(task.inputRequests).some((k) => Object.hasOwn(responses, k))) {
      task.inputRequests = undefined;
      task.set('working');
      const next = task.call.resume(responses as Record<string, unknown>, task.cancellation, () => undefined);
      this.follow(task, next);
      // A partial answer is asked again at once (see BridgedCall.resume): let it show before the ack.
      await Promise.race([next, new Promise((resolve) => setImmediate(resolve))]);
    }
    return { resultType: 'complete' };
  }

  /** `tasks/cancel`: cancels the call upstream; a finished task is left as it is. */
  cancel(req: JsonRpcRequest, ctx: ModernContext): McpResult {
    const task = this.find(req, ctx);
    this.cancelTask(task);
    return { resultType: 'complete' };
  }

  /**
   * For `subscriptions/listen`: follows the task `taskId` names, when it is this principal's and
   * held here (undefined otherwise). `hear` gets the task as tasks/get shows it on each status
   * change; `now` is how it shows now.
   */
  watch(taskId: string, ctx: ModernContext, hear: (task: McpResult) => void): { now: McpResult; stop(): void } | undefined {
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
  ownerElsewhere(req: JsonRpcRequest, ctx: ModernContext): Owner | undefined {
    return this.ownerOf(req.params?.taskId, ctx);
  }

  /** The other reachable replica that holds the task `taskId` names, for the principal it was given to. */
  ownerOf(taskId: unknown, ctx: ModernContext): Owner | undefined {
    const claims = typeof taskId === 'string' ? this.o.sealer.open<TaskClaims>('task', taskId) : undefined;
    if (!claims || claims.replica === this.o.replicaId || !claims.url || claims.principal !== (ctx.principal ?? '')) return undefined;
    return { replica: claims.replica, url: claims.url, holds: 'task' };
  }

  close(): void {
    for (const task of this.byKey.values()) {
      clearTimeout(task.timer);
      this.cancelTask(task);
    }
  }

  private cancelTask(task: Task): void {
    if (task.terminal || task.cancelRequested) return;
    task.cancelRequested = true;
    if (task.call.awaitingInput) task.call.expire();
    else task.cancellation.cancel();
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
    if (task.terminal) return;
    if (step.kind === 'input') {
      task.inputRequests = step.inputRequests;
      return task.set('input_required');
    }
    const { outcome } = step;
    if ('failure' in outcome) {
      if (task.cancelRequested) return this.finish(task, 'cancelled');
      return this.fail(task, toJsonRpcError(outcome.failure, 'modern'));
    }
    const res = outcome.response;
    if (res.error) return this.fail(task, modernUpstreamError(res.error));
    try {
      task.result = withoutRelatedTask(await task.shape(res.result ?? {}));
      this.finish(task, 'completed');
    } catch (err) {
      this.fail(task, toJsonRpcError(err, 'modern'));
    }
  }

  private fail(task: Task, error: JsonRpcErrorObject): void {
    task.error = error;
    this.finish(task, 'failed');
  }

  private finish(task: Task, status: TaskStatus): void {
    task.inputRequests = undefined;
    task.set(status);
    this.o.log.debug({ task: task.key.slice(0, 8), status }, 'task finished');
    // Finished tasks are kept for their TTL, but not without bound: a client's oldest go first.
    const mine = [...(this.byClient.get(task.clientKey) ?? [])].filter((t) => t.terminal);
    for (const old of mine.slice(0, Math.max(0, mine.length - this.o.perClient * KEPT_PER_RUNNING))) this.expire(old);
  }

  /** The task's time is up: cancelled if still running, then forgotten. */
  private expire(task: Task): void {
    clearTimeout(task.timer);
    this.cancelTask(task);
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
  private find(req: JsonRpcRequest, ctx: ModernContext): Task {
    const claims = this.claims(req);
    const task = claims && claims.principal === (ctx.principal ?? '') ? this.byKey.get(claims.k) : undefined;
    if (task) return task;
    if (claims && claims.principal === (ctx.principal ?? '') && claims.replica !== this.o.replicaId) {
      throw new ProxyError('TASK_NOT_FOUND', `Failed to retrieve task: it is held by replica "${claims.replica}", which this one cannot reach (set replicas.url on every replica)`);
    }
    throw new ProxyError('TASK_NOT_FOUND', 'Failed to retrieve task: Task not found (unknown, expired, or issued to another client)');
  }

  private describe(task: Task, detailed: boolean): McpResult {
    const out: McpResult = { taskId: task.id, status: task.status, createdAt: task.createdAt, lastUpdatedAt: task.lastUpdatedAt, ttlMs: this.o.ttlMs, pollIntervalMs: this.o.pollIntervalMs };
    if (!detailed) return out;
    if (task.status === 'input_required' && task.inputRequests) out.inputRequests = task.inputRequests;
    if (task.status === 'completed') out.result = task.result;
    if (task.status === 'failed') out.error = task.error;
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
