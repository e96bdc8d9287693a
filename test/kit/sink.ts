/** A client side in memory: records what the relay delivers, and waits for what a test expects. */
import type { ProxyError } from '../../src/jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../../src/jsonrpc/message.js';
import type { ClientSink } from '../../src/core/relay.js';

export class RecordingSink implements ClientSink {
  readonly delivered: Array<{ msg: Record<string, unknown>; relatedId?: JsonRpcId }> = [];
  ended?: ProxyError;
  private waiters: Array<() => void> = [];

  deliver(frame: Frame, relatedId?: JsonRpcId): void {
    this.delivered.push({ msg: frame.msg as unknown as Record<string, unknown>, relatedId });
    this.waiters.splice(0).forEach((wake) => wake());
  }

  end(reason: ProxyError): void {
    this.ended = reason;
    this.waiters.splice(0).forEach((wake) => wake());
  }

  /** The answer to request `id`, once it came. */
  async answer(id: JsonRpcId): Promise<Record<string, unknown>> {
    for (;;) {
      const found = this.delivered.find(({ msg }) => msg.id === id && !('method' in msg));
      if (found) return found.msg;
      if (this.ended) throw new Error(`the session ended before request ${String(id)} was answered`);
      await new Promise<void>((wake) => this.waiters.push(wake));
    }
  }
}
