/**
 * Progress lines while the proxy waits for something before it serves (--fail-fast's start-up
 * check): a quiet wait of many seconds looks like a hang, so every few seconds the log says
 * what it waits for and how long it will wait.
 */
import type { Logger } from 'pino';

const MAX_EVERY_MS = 5_000;

/**
 * Resolves or rejects as `work` does; until then logs `message(waited, limit)` at info every
 * 5 s, or at each quarter of `limitMs` when that is sooner (a short limit still shows progress).
 */
export async function logWhileWaiting<T>(
  work: Promise<T>,
  limitMs: number,
  log: Logger,
  message: (waited: string, limit: string) => string,
): Promise<T> {
  const everyMs = Math.max(100, Math.min(MAX_EVERY_MS, Math.floor(limitMs / 4)));
  let waitedMs = 0;
  const timer = setInterval(() => {
    waitedMs += everyMs;
    if (waitedMs < limitMs) log.info({ waitedMs, limitMs }, message(seconds(waitedMs), seconds(limitMs)));
  }, everyMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/** `10 s`, `1.5 s`. */
export function seconds(ms: number): string {
  return `${ms % 1000 === 0 ? ms / 1000 : (ms / 1000).toFixed(1)} s`;
}
