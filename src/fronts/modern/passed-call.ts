/**
 * One modern call passed through to a 2026-07-28 upstream, which a task of the proxy's may take
 * over (tasks.ts: the extension served in front of a server that does not offer it). The
 * upstream's answer becomes the call's step: an `input_required` answer asks the client, whose
 * answers go upstream again with the server's `requestState` (kept here, never shown to the
 * client); anything else ends the call. Bounded as a call on a pooled legacy session is (pooled-call.ts): the request's time
 * limit (progress restarts it) until a task adopts the call, then the task's; a round's input
 * count in the client's share of listen.heldBytes, at most `maxInputBytes` of them, and a round
 * nobody answers ends after `inputTimeoutMs`. The steps are read only for a task: a call answered
 * in time is passed through as any other request.
 */
import type { Held, HeldBytes } from '../../core/held-bytes.js';
import { ProxyError } from '../../jsonrpc/errors.js';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../jsonrpc/message.js';
import type { InputRequests, InputResponses } from '../../mcp/input-round.js';
import { refusedInputRequests, refusedUrlError } from '../../mcp/url-elicitation.js';
import type { CallOptions, UpstreamAnswer } from '../../upstream/call.js';
import { NO_TIMEOUT_MS } from '../../upstream/modern-http.js';
import { onAbort, type CallSignal } from '../../upstream/call-abort.js';
import type { CallStep, TaskCall } from './tasks.js';

export interface PassedCallOptions {
  /** The request as the upstream gets it. */
  req: JsonRpcRequest;
  send(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer>;
  timeoutMs: number;
  inputTimeoutMs: number;
  cancellation: CallSignal;
  /** Progress and log messages for whoever waits on the call now. */
  onNotification(n: JsonRpcNotification): void;
  /** Whose share of listen.heldBytes a round's input requests count in. */
  clientKey: string;
  held: HeldBytes;
  maxInputBytes: number;
}

export class PassedCall implements TaskCall {
  readonly done: Promise<void>;
  /** The upstream's answer to the request under way (rejects like ModernUpstream.send). */
  answered: Promise<UpstreamAnswer>;
  private settled!: () => void;
  private step: Promise<CallStep> | undefined;
  private over = false;
  private waiting = false;
  private inputTimer: NodeJS.Timeout | undefined;
  private held: Held | undefined;
  /** The server's requestState for the round the client is asked. */
  private state: unknown;
  private abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private limitMs: number;
  private notify: (n: JsonRpcNotification) => void;
  private current: CallSignal;

  constructor(private readonly o: PassedCallOptions) {
    this.done = new Promise((resolve) => (this.settled = resolve));
    this.limitMs = o.timeoutMs;
    this.notify = o.onNotification;
    this.current = o.cancellation;
    this.watch(o.cancellation);
    this.answered = this.send(o.req);
  }

  get awaitingInput(): boolean {
    return this.waiting;
  }

  next(): Promise<CallStep> {
    return (this.step ??= this.answered.then(
      (exchange) => this.stepOf(exchange),
      (err: unknown) =>
        this.end(
          err instanceof ProxyError ? err : new ProxyError('UPSTREAM_PROTOCOL', `The upstream call failed: ${(err as Error)?.message}`),
        ),
    ));
  }

  resume(responses: InputResponses, cancellation: CallSignal, onNotification: (n: JsonRpcNotification) => void): Promise<CallStep> {
    if (!this.waiting) return this.next();
    this.stopWaiting();
    this.notify = onNotification;
    this.watch(cancellation);
    const { req } = this.o;
    this.step = undefined;
    this.answered = this.send({ ...req, params: { ...req.params, inputResponses: responses, requestState: this.state } });
    return this.next();
  }

  adopt(cancellation: CallSignal, onNotification: (n: JsonRpcNotification) => void, timeoutMs: number): void {
    this.notify = onNotification;
    this.watch(cancellation);
    this.limitMs = timeoutMs;
    if (this.timer) this.restartTimer();
  }

  expire(): void {
    this.stop(
      'The client did not supply the requested input in time',
      new ProxyError('INPUT_TIMEOUT', 'The client did not supply the requested input in time'),
    );
  }

  /** A request under way is closed upstream (which cancels it); a call waiting for input simply ends. */
  stop(_reason: string, err: ProxyError): void {
    if (this.over) return;
    if (!this.waiting) return this.abort.abort(err);
    this.stopWaiting();
    this.step = Promise.resolve(this.end(err));
  }

  private send(req: JsonRpcRequest): Promise<UpstreamAnswer> {
    this.abort = new AbortController();
    this.restartTimer();
    const onNotification = ({ msg }: { msg: unknown }) => {
      const n = msg as JsonRpcNotification;
      if (n.method === 'notifications/progress') this.restartTimer();
      this.notify(n);
    };
    return this.o.send(req, { signal: this.abort.signal, timeoutMs: NO_TIMEOUT_MS, onNotification }).finally(() => {
      clearTimeout(this.timer);
      this.timer = undefined;
    });
  }

  private restartTimer(): void {
    clearTimeout(this.timer);
    const abort = this.abort;
    const ms = this.limitMs;
    this.timer = setTimeout(
      () =>
        abort.abort(
          new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${this.o.req.method} within ${ms} ms`, { timeoutMs: ms }),
        ),
      Math.min(ms, NO_TIMEOUT_MS),
    );
  }

  private watch(cancellation: CallSignal): void {
    this.current = cancellation;
    onAbort(cancellation, () => {
      // Only whoever waits now cancels: a finished round's stream may close freely.
      if (this.current === cancellation && !this.waiting && !this.over)
        this.abort.abort(new ProxyError('CLIENT_GONE', 'The client cancelled the request'));
    });
  }

  private stepOf({ frame, status }: UpstreamAnswer): CallStep {
    if (status === 401 || status === 403)
      return this.end(
        new ProxyError('UPSTREAM_PROTOCOL', `The upstream refused the proxy's credentials (HTTP ${status}); check upstream.headers`),
      );
    const response = frame.msg as JsonRpcResponse;
    const result = response.result;
    if (result?.resultType === 'task')
      return this.end(
        new ProxyError(
          'UPSTREAM_PROTOCOL',
          'The upstream answered with a task of its own, though its server/discover does not offer the tasks extension',
        ),
      );
    if (result?.resultType !== 'input_required') return this.end(undefined, { response, frame });
    const unsafe = refusedInputRequests(result.inputRequests);
    if (unsafe) return this.end(refusedUrlError(unsafe));
    const inputRequests = result.inputRequests as InputRequests;
    const bytes = Buffer.byteLength(JSON.stringify(inputRequests ?? {}));
    if (bytes > this.o.maxInputBytes) {
      return this.end(
        new ProxyError(
          'UPSTREAM_PROTOCOL',
          `The upstream asked for ${bytes} bytes of input in one round; the proxy puts at ` +
            `most ${this.o.maxInputBytes} to a modern client (modern.maxInputRequestBytes)`,
        ),
      );
    }
    // Waiting, the call keeps its input requests (and the server's state) for a client that is away.
    const stateBytes = result.requestState === undefined ? 0 : Buffer.byteLength(JSON.stringify(result.requestState));
    const held = this.o.held.hold(this.o.clientKey, 'input_round', bytes + stateBytes, () => this.letGo());
    if (held.dropped) return this.end(heldBytesExceeded()); // too large for the budget on its own
    this.held = held;
    this.state = result.requestState;
    this.waiting = true;
    this.inputTimer = setTimeout(() => this.expire(), this.o.inputTimeoutMs);
    return { kind: 'input', inputRequests };
  }

  /** The budget needs the room of this waiting call: given up, as one nobody answered. */
  private letGo(): void {
    if (!this.held) return; // dropped while it was being held: stepOf ends the call
    this.held = undefined;
    this.stop('The client did not come back for the input the call needs', heldBytesExceeded());
  }

  private stopWaiting(): void {
    clearTimeout(this.inputTimer);
    this.waiting = false;
    this.held?.release();
    this.held = undefined;
  }

  /** The call is over: with its failure, or the upstream's answer. */
  private end(failure: ProxyError | undefined, answer?: { response: JsonRpcResponse; frame: UpstreamAnswer['frame'] }): CallStep {
    this.stopWaiting();
    this.over = true;
    this.settled();
    return { kind: 'done', outcome: failure ? { failure } : answer! };
  }
}

function heldBytesExceeded(): ProxyError {
  return new ProxyError(
    'HELD_BYTES_EXCEEDED',
    "The call waited for the client's input while the client held more than the " +
      'proxy keeps for it (listen.heldBytes), and was given up; send the request again',
  );
}
