/**
 * One exchange (a client request and its answer) as the engine runs it, in every cell of the era
 * matrix: the request filters first (a refusal answered at once, or the request as they rewrote it
 * and the variant its result is viewed in), then, once the upstream answered, the refusal of
 * answers no client may be given, and error annotation or result shaping. What differs per cell
 * is only how the upstream is called and how the era completes the answer; those stay with the
 * caller. A result no filter looks at is never decoded: its bytes go on as the upstream sent them.
 */
import type { Logger } from 'pino';
import {
  errorResponse,
  type Frame,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../jsonrpc/message.js';
import { targetOf } from '../mcp/requests.js';
import { refusedUrlElicitations, refusedUrlError } from '../mcp/url-elicitation.js';
import type { McpResult } from '../transformers/contract.js';
import type { ChainVerdict } from './filters.js';

/** What an exchange asks of the filters bound to its session or request (BoundFilters, src/core/filters.ts). */
export interface Negotiation {
  /** Checks a request before it goes upstream: an error to answer, or the request rewritten and the variant (`scope`) of its result. */
  onRequest(req: JsonRpcRequest): ChainVerdict;
  /** A replacement for an upstream error to a request made in this variant, or undefined to relay it as is. */
  annotateError?(error: JsonRpcErrorObject, variant: string | undefined): JsonRpcErrorObject | undefined;
  /** Whether `learn` reads this method's results (every one, shaped or not: the tool pins see each listing). */
  learns?(method: string): boolean;
  /** What the filters learn from a result the upstream gave, before it is shaped (or relayed unshaped). */
  learn?(method: string, result: McpResult): void;
  /** Whether shape would look at this result: when not, it is relayed without being decoded. */
  wantsResult(method: string, name: string | undefined, variant?: string): boolean;
  /** A replacement result, or undefined to relay the upstream's bytes. */
  shape(
    method: string,
    name: string | undefined,
    result: McpResult,
    variant?: string,
    traceparent?: string,
  ): McpResult | undefined | Promise<McpResult | undefined>;
}

/** A result the upstream gave, as the exchange hands it to the era to complete. */
export interface Answered {
  method: string;
  /** The upstream's result, and what the filters made of it (the same object when they changed nothing). */
  result: McpResult;
  shaped: McpResult;
  /** Whether a filter changed the result (`shaped` is not the upstream's). */
  reshaped: boolean;
}

/**
 * What the client's era adds to an answer: nothing for a legacy client (AS_SENT); for a modern one,
 * what its revision requires, which depends on the era of the upstream that answered (fronts/modern/route.ts).
 */
export interface EraCompletion {
  /** The upstream's error as the client gets it (`frame`: its bytes, when nothing changed it). */
  error(id: JsonRpcId, error: JsonRpcErrorObject, frame: Frame | undefined): Frame;
  /** The result as it came, completed on its bytes; undefined: it must be decoded first. */
  completeBytes(id: JsonRpcId, method: string, frame: Frame, res: JsonRpcResponse): Frame | undefined;
  complete(a: Answered): McpResult;
}

/** A legacy client's answer is the upstream's: its bytes when nothing changed it. */
export const AS_SENT: EraCompletion = {
  error: (id, error, frame) => frame ?? { msg: errorResponse(id, error) },
  completeBytes: (_id, _method, frame) => frame,
  complete: (a) => a.shaped,
};

export class Exchange {
  private wants?: boolean;

  private constructor(
    /** The method the client asked for (the answer is completed as its). */
    private readonly asked: string,
    /** The request as the filters rewrote it: what goes upstream. */
    readonly request: JsonRpcRequest,
    /** The variant its result is viewed in. */
    readonly variant: string | undefined,
    private readonly negotiation: Negotiation | undefined,
    /** The request's W3C traceparent, for the transformers' spans and the upstream's latency. */
    readonly traceparent: string | undefined,
    /** The answer to the client's request from the shaped result of the one sent (a search's, src/core/tool-search.ts). */
    private readonly finish: ((result: McpResult) => McpResult) | undefined,
  ) {}

  /** The exchange of `req`, or the filters' refusal to answer at once (`negotiation` absent: nothing negotiated, a pure relay). */
  static open(req: JsonRpcRequest, negotiation: Negotiation | undefined, traceparent?: string): Exchange | { refused: JsonRpcErrorObject } {
    const verdict = negotiation?.onRequest(req);
    if (verdict && 'error' in verdict) return { refused: verdict.error };
    return new Exchange(req.method, verdict?.request ?? req, verdict?.scope, negotiation, traceparent, verdict?.finish);
  }

  get method(): string {
    return this.request.method;
  }

  /** The tool or prompt name, or the resource URI, the request names. */
  get target(): string | undefined {
    return targetOf(this.request.params);
  }

  /** Whether a filter looks at the result: when none does, it is relayed (or completed) on its bytes, undecoded. */
  wantsResult(): boolean {
    this.wants ??= this.finish !== undefined || (this.negotiation?.wantsResult(this.method, this.target, this.variant) ?? false);
    return this.wants;
  }

  /** Throws the proxy's refusal of an answer that would have the client open a URL no client may be sent to. */
  screen(res: JsonRpcResponse, log: Logger): void {
    const unsafe = refusedUrlElicitations(res.error);
    if (!unsafe) return;
    log.warn({ method: this.method, reason: unsafe }, "refused an upstream's -32042 answer");
    throw refusedUrlError(unsafe);
  }

  /** The upstream's error as the filters annotate it for the request's variant (undefined: unchanged). */
  annotate(error: JsonRpcErrorObject): JsonRpcErrorObject | undefined {
    return this.negotiation?.annotateError?.(error, this.variant);
  }

  /** The result as the filters shape it (undefined: unchanged); only called when `wantsResult`, or for a result that came later. */
  shape(result: McpResult): McpResult | undefined | Promise<McpResult | undefined> {
    return this.negotiation?.shape(this.method, this.target, result, this.variant, this.traceparent);
  }

  /** A result that arrives after the exchange answered (a task's): shaped, or as it is. */
  readonly shapeLater = async (result: McpResult): Promise<McpResult> => (await this.shape(result)) ?? result;

  /**
   * The upstream's answer to request `id` as the client gets it: screened (throws the proxy's refusal), then its
   * error annotated or its result shaped, and completed for the client's era. A result no filter looks at is
   * completed on its bytes where the era can, never decoded; the answer is ready at once unless a filter shapes it.
   */
  answer(id: JsonRpcId, res: JsonRpcResponse, frame: Frame | undefined, era: EraCompletion, log: Logger): Frame | Promise<Frame> {
    this.screen(res, log);
    if (res.error) {
      const annotated = this.annotate(res.error);
      return era.error(id, annotated ?? res.error, annotated ? undefined : frame);
    }
    if (this.negotiation?.learns?.(this.method)) this.negotiation.learn!(this.method, res.result ?? {});
    // A result the filters left as it was (whether or not they looked) goes on as its bytes where the era can complete them.
    const done = (shaped: McpResult | undefined): Frame => {
      if (this.finish) shaped = this.finish(shaped ?? res.result ?? {});
      const reshaped = shaped !== undefined;
      return (
        (!reshaped && frame && era.completeBytes(id, this.method, frame, res)) || {
          msg: {
            jsonrpc: '2.0',
            id,
            result: era.complete({ method: this.asked, result: res.result ?? {}, shaped: shaped ?? res.result ?? {}, reshaped }),
          },
        }
      );
    };
    if (!this.wantsResult()) return done(undefined);
    const shaped = this.shape(res.result ?? {});
    return shaped instanceof Promise ? shaped.then(done) : done(shaped);
  }
}
