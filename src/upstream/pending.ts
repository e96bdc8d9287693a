/**
 * The one pending-call engine, under both eras: requests waiting for the upstream's answer, by
 * id, each with its timer (progress restarts it; a call waiting for the client's input holds
 * it), the progress tokens that name a call, and settling: one call, or all of them when the
 * connection goes. The legacy relay keys calls by the client's own ids (its bytes pass
 * unchanged); the proxy's upstream client by ids of its own.
 */
import type { JsonRpcId } from '../jsonrpc/message.js';

interface Entry<T> {
  call: T;
  timer: NodeJS.Timeout | undefined;
  timeoutMs: number;
  progressToken?: string | number;
}

export class PendingCalls<T> {
  private readonly calls = new Map<JsonRpcId, Entry<T>>();
  private readonly byToken = new Map<string | number, JsonRpcId>();

  /** `onTimeout` runs when a call's timer fires: the call is already settled (removed). */
  constructor(private readonly onTimeout: (id: JsonRpcId, call: T, timeoutMs: number) => void) {}

  get size(): number {
    return this.calls.size;
  }

  /** Waits for `id`; `progressToken`, when given, names it in progress notifications. */
  add(id: JsonRpcId, call: T, timeoutMs: number, progressToken?: string | number): void {
    const entry: Entry<T> = { call, timer: undefined, timeoutMs, progressToken };
    this.calls.set(id, entry);
    if (progressToken !== undefined) this.byToken.set(progressToken, id);
    this.arm(id, entry);
  }

  has(id: JsonRpcId): boolean {
    return this.calls.has(id);
  }

  get(id: JsonRpcId): T | undefined {
    return this.calls.get(id)?.call;
  }

  /** The only call waiting, if exactly one is. */
  only(): T | undefined {
    return this.calls.size === 1 ? this.calls.values().next().value!.call : undefined;
  }

  /** The call a progress token names, its timer restarted (progress means the upstream is alive). */
  progressed(token: string | number): { id: JsonRpcId; call: T } | undefined {
    const id = this.byToken.get(token);
    const entry = id === undefined ? undefined : this.calls.get(id);
    if (!entry) return undefined;
    this.arm(id!, entry);
    return { id: id!, call: entry.call };
  }

  /** Gives a call a new time limit, from now (a call that became a task may run for the task's time). */
  retime(id: JsonRpcId, timeoutMs: number): void {
    const entry = this.calls.get(id);
    if (!entry) return;
    entry.timeoutMs = timeoutMs;
    this.arm(id, entry);
  }

  /** Stops a call's timer while the proxy waits for the client (an input round); `resume` restarts it. */
  hold(id: JsonRpcId): void {
    const entry = this.calls.get(id);
    if (entry) clearTimeout(entry.timer);
  }

  resume(id: JsonRpcId): void {
    const entry = this.calls.get(id);
    if (entry) this.arm(id, entry);
  }

  /** Stops waiting for `id`; the call, or undefined when nothing waited. */
  settle(id: JsonRpcId): T | undefined {
    const entry = this.calls.get(id);
    if (!entry) return undefined;
    clearTimeout(entry.timer);
    this.calls.delete(id);
    if (entry.progressToken !== undefined) this.byToken.delete(entry.progressToken);
    return entry.call;
  }

  /** Stops waiting for every call (the connection is gone); each, in the order they began. */
  settleAll(): Array<[JsonRpcId, T]> {
    return [...this.calls.keys()].map((id) => [id, this.settle(id)!]);
  }

  private arm(id: JsonRpcId, entry: Entry<T>): void {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      if (this.settle(id) !== undefined) this.onTimeout(id, entry.call, entry.timeoutMs);
    }, entry.timeoutMs);
  }
}
