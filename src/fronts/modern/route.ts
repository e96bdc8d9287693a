/**
 * How a modern request reaches the upstream, one implementation per era the upstream speaks: a
 * legacy one through a pooled session (pooled-route.ts), a 2026-07-28 one passed through
 * (pass-through.ts). The driver (handler.ts) runs everything else the same for both: the request
 * filters, the task offer, and the exchange's answer (screening, error annotation or result
 * shaping). A route says how the upstream is called and how its answer is completed.
 */
import type { EraCompletion, Exchange } from '../../core/exchange.js';
import type { Frame, JsonRpcRequest, JsonRpcResponse } from '../../jsonrpc/message.js';
import type { RequestContext } from '../../mcp/request-context.js';
import type { UpstreamServer } from '../../upstream/era.js';
import type { TaskWatch } from './listen.js';
import type { ModernReply } from './reply.js';
import type { CallStep, ShapeResult, TaskCall } from './tasks.js';

/** What a call upstream came to. */
export type Ran =
  /** The upstream's final answer (`frame`: its bytes, `status`: its HTTP status), and how it is completed for a modern client. */
  | { response: JsonRpcResponse; frame?: Frame; status?: number; completion: EraCompletion }
  /** The proxy's answer in its place: an input round, or the server's own answer that is not final (passed as it is). */
  | { answer: Frame }
  /** Still running after the time it had: it becomes one of the proxy's tasks. */
  | { task: TaskCall; next: Promise<CallStep>; shape: ShapeResult };

export interface UpstreamRoute {
  /** What the upstream said about itself: its initialize or discover result. */
  server(): Promise<UpstreamServer>;
  /** Whether the proxy's own tasks are served in front of it (the tasks extension offered, and the upstream serves none itself). */
  ownTasks(): Promise<boolean>;
  /** Calls the upstream with the exchange's request; `within`: how long a call that may become a task has before it does. */
  run(req: JsonRpcRequest, exchange: Exchange, ctx: RequestContext, reply: ModernReply, within?: number): Promise<Ran>;
  /** `server/discover`, with `extensions` (the filters', the proxy's tasks) added to the upstream's. */
  discover(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, extensions: Record<string, unknown>): Promise<void>;
  /** `subscriptions/listen`; `tasks`: where the proxy's own tasks are followed. */
  listen(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, tasks: TaskWatch | undefined): Promise<void>;
}
