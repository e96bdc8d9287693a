/**
 * How a modern request reaches the upstream, one implementation per era the upstream speaks: a
 * legacy one through a pooled session (pooled-route.ts), a 2026-07-28 one passed through
 * (pass-through.ts). The driver (handler.ts) runs everything else the same for both: the request
 * filters, the task offer, screening, error annotation, result shaping and the answer. A route
 * says how the upstream is called and how its answer is completed for a modern client.
 */
import type { Exchange } from '../../core/exchange.js';
import type { Frame, JsonRpcErrorObject, JsonRpcId, JsonRpcRequest, JsonRpcResponse } from '../../jsonrpc/message.js';
import type { RequestContext } from '../../mcp/request-context.js';
import type { McpResult } from '../../transformers/contract.js';
import type { UpstreamServer } from '../../upstream/era.js';
import type { TaskWatch } from './listen.js';
import type { ModernReply } from './reply.js';
import type { CallStep, ShapeResult, TaskCall } from './tasks.js';

/** What a call upstream came to. */
export type Ran =
  /** The upstream's final answer: an error to annotate, or a result to shape and complete (`frame`: its bytes). */
  | { response: JsonRpcResponse; frame?: Frame; status?: number; afterInput: boolean }
  /** The proxy's answer in its place: an input round, or the server's own answer that is not final (passed as it is). */
  | { answer: Frame }
  /** Still running after the time it had: it becomes one of the proxy's tasks. */
  | { task: TaskCall; next: Promise<CallStep>; shape: ShapeResult };

/** A result the upstream gave, as the driver hands it to the route to complete. */
export interface Answered {
  id: JsonRpcId;
  method: string;
  /** The upstream's result, and what the filters made of it (the same object when they changed nothing). */
  result: McpResult;
  shaped: McpResult;
  reshaped: boolean;
  /** Shaped by the client's input (an input round ran): never cached. */
  afterInput: boolean;
  server: UpstreamServer;
}

export interface UpstreamRoute {
  /** What the upstream said about itself: its initialize or discover result. */
  server(): Promise<UpstreamServer>;
  /** Whether the proxy's own tasks are served in front of it (the tasks extension offered, and the upstream serves none itself). */
  ownTasks(): Promise<boolean>;
  /** Calls the upstream with the exchange's request; `within`: how long a call that may become a task has before it does. */
  run(req: JsonRpcRequest, exchange: Exchange, ctx: RequestContext, reply: ModernReply, within?: number): Promise<Ran>;
  /** The upstream's error as the client gets it (`frame`: its bytes, when nothing changed it). */
  error(id: JsonRpcId, error: JsonRpcErrorObject, frame: Frame | undefined): Frame;
  /** The result completed for a modern client on its bytes, or undefined when it must be decoded and completed (`complete`). */
  completeBytes(
    id: JsonRpcId,
    method: string,
    frame: Frame,
    response: JsonRpcResponse,
    afterInput: boolean,
    server: UpstreamServer,
  ): Frame | undefined;
  complete(a: Answered): McpResult;
  /** `server/discover`, with `extensions` (the filters', the proxy's tasks) added to the upstream's. */
  discover(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, extensions: Record<string, unknown>): Promise<void>;
  /** `subscriptions/listen`; `tasks`: where the proxy's own tasks are followed. */
  listen(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, tasks: TaskWatch | undefined): Promise<void>;
}
