/**
 * Clients that stop reading their response streams (listen.slowReaders): what the proxy buffers
 * for one stays bounded.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';

/** What a response stream tolerates from a client that stops reading (listen.slowReaders). */
export interface SlowReaderLimits {
  maxUnreadBytes: number;
  stallMs: number;
  log: Logger;
}

/**
 * Keeps a client that does not read from making the proxy buffer without bound: a message is not
 * written while more than `maxUnreadBytes` of the earlier ones still wait for the client (the
 * latest message, of any size, does not count: a reader busy with one large answer is not
 * behind), and a stream whose waiting bytes do not go down for `stallMs` is closed.
 * Closing is the error the client can get: it ends the stream, and the relay then treats the
 * client as gone (its calls are cancelled upstream).
 */
export class ReaderWatch {
  private timer: NodeJS.Timeout | undefined;
  private lastUnread = 0;
  /** Bytes written since the last look: waiting bytes that grew by new messages are not a stall. */
  private added = 0;
  /** Bytes of the latest message still unread when it was written. */
  private latest = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly limits: SlowReaderLimits,
  ) {}

  /** The response closed: nothing more to watch. */
  closed(): void {
    this.stopWatching();
  }

  /**
   * Writes with `send` unless the earlier messages still leave too much unread (then the stream
   * is closed instead), and watches for progress while the client is behind. A `keepAlive`
   * write (a ping) is not a message: it joins the latest message's allowance instead of
   * replacing it, so a ping after a large answer does not make that answer count as behind.
   */
  write(send: () => void, keepAlive = false): void {
    const behind = this.res.writableLength - this.latest;
    if (behind > this.limits.maxUnreadBytes)
      return this.cut(`${behind} bytes of earlier messages wait unread (listen.slowReaders.maxUnreadBytes: ${this.limits.maxUnreadBytes})`);
    const before = this.res.writableLength;
    send();
    const written = Math.max(0, this.res.writableLength - before);
    this.latest = keepAlive ? this.latest + written : written;
    this.added += written;
    if (this.timer || this.res.writableLength === 0 || this.res.destroyed) return;
    this.lastUnread = this.res.writableLength;
    this.added = 0;
    this.timer = setInterval(() => {
      const unread = this.res.writableLength;
      if (unread === 0 || this.res.destroyed) return this.stopWatching();
      const read = this.lastUnread + this.added - unread;
      if (read <= 0)
        return this.cut(`the client read nothing of ${unread} waiting bytes for ${this.limits.stallMs} ms (listen.slowReaders.stallMs)`);
      this.lastUnread = unread;
      this.added = 0;
    }, this.limits.stallMs);
    this.timer.unref();
  }

  private stopWatching(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private cut(why: string): void {
    this.stopWatching();
    this.limits.log.warn({ why }, 'client is not reading its response stream; closing it');
    this.res.destroy();
  }
}
