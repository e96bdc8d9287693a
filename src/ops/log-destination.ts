/**
 * Where JSON log lines go: a stream (stderr in the CLI), a few lines at a time. Lines are
 * gathered for `GATHER_MS` (twice that when no other line comes; or until `GATHER_CHARS` wait)
 * and written together: with an access-log line per request, one write per line was a large part
 * of what a request cost, and so is every extra wake-up of the event loop (a timer that fires).
 * Written on the event loop's own thread: for a pipe, Node writes at once without blocking and
 * queues what the pipe cannot take yet (a reader that falls behind costs memory, never a stalled
 * event loop); a file is written synchronously. pino's own asynchronous destination wrote from
 * libuv's thread pool instead, waking one of its threads for every write.
 */
import type { Writable } from 'node:stream';

/** How long lines are gathered; a line waits at most twice this long. */
export const GATHER_MS = 10;
/** Lines waiting beyond this many characters are written at once. */
const GATHER_CHARS = 16 * 1024;

export interface LogDestination {
  write(line: string): void;
  /** Writes what waits now (when the process exits). */
  drain(): void;
}

export function logDestination(out: Writable): LogDestination {
  let waiting = '';
  /** When the oldest waiting line came (ms since the epoch). */
  let since = 0;
  let timer: NodeJS.Timeout | undefined;
  let broken = false;
  // A reader that went away (EPIPE) ends the logging, not the process.
  out.on('error', () => {
    broken = true;
  });
  const drain = () => {
    clearTimeout(timer);
    timer = undefined;
    const text = waiting;
    waiting = '';
    if (text && !broken) out.write(text);
  };
  return {
    write(line) {
      const now = Date.now();
      if (!waiting) {
        since = now;
        // Lines that keep coming write the ones before them (below), on the event loop's turn
        // that is running anyway; this timer, which would wake it, is for the last ones.
        timer = setTimeout(drain, 2 * GATHER_MS);
        timer.unref();
      }
      waiting += line;
      if (waiting.length >= GATHER_CHARS || now - since >= GATHER_MS) drain();
    },
    drain,
  };
}
