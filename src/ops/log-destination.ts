/**
 * Where JSON log lines go: a file descriptor (stderr), written from libuv's thread pool so that a
 * reader that falls behind never blocks the event loop. Lines are gathered for up to
 * `GATHER_MS` (or until `GATHER_BYTES` wait) and written together: one access-log line per
 * request would otherwise be one thread-pool write per request, which costs the proxy more than
 * the rest of the line. `drainSync` writes what waits at once (the process is exiting).
 */
import pino from 'pino';

/** How long a line may wait for others to be written with it. */
export const GATHER_MS = 10;
/** Lines waiting beyond this many characters are written at once. */
const GATHER_BYTES = 16 * 1024;

export interface LogDestination extends pino.DestinationStream {
  /** Writes everything still waiting, synchronously (for `process.on('exit')`). */
  drainSync(): void;
}

export function logDestination(fd: number): LogDestination {
  // pino flushes this stream synchronously at exit, and stops writing to it on EPIPE.
  const dest = pino.destination({ fd, sync: false });
  let waiting = '';
  let timer: NodeJS.Timeout | undefined;
  const write = () => {
    clearTimeout(timer);
    timer = undefined;
    const text = waiting;
    waiting = '';
    if (text) dest.write(text);
  };
  return {
    write(line: string) {
      waiting += line;
      if (waiting.length >= GATHER_BYTES) return write();
      if (timer) return;
      timer = setTimeout(write, GATHER_MS);
      timer.unref();
    },
    drainSync() {
      write();
      try {
        dest.flushSync();
      } catch {
        // Nothing more can be done for a log that cannot be written.
      }
    },
  };
}
