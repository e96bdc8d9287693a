/**
 * Readiness: can the upstream be used now? Real traffic is the first witness (an upstream
 * that answered, or one that failed to start, says so); when nothing recent says either, one
 * probe (start and initialize a session, then end it) decides. Answers are cached for
 * `ttlMs` and concurrent checks share one probe, so a probe per call never happens.
 */

export interface ReadinessReport {
  ready: boolean;
  /** Why not, when not ready. */
  cause?: string;
  /** When this was learnt (ms since the epoch), and how. */
  checkedAt: number;
  source: 'traffic' | 'probe';
}

export class Readiness {
  private last: ReadinessReport | undefined;
  private probing: Promise<ReadinessReport> | undefined;

  /** `probe` resolves when a fresh upstream session initialized, rejects with the cause otherwise. */
  constructor(
    private readonly probe: () => Promise<void>,
    private readonly ttlMs: number,
  ) {}

  /** What real traffic just showed (called for every upstream message: a fresh "ready" is kept as it is). */
  note(ready: boolean, cause?: string): void {
    const now = Date.now();
    if (ready && this.last?.ready && now - this.last.checkedAt < 1000) return;
    this.last = { ready, ...(cause ? { cause } : {}), checkedAt: now, source: 'traffic' };
  }

  /** The freshest answer, probing when the last one is older than the TTL. */
  check(): Promise<ReadinessReport> {
    if (this.last && Date.now() - this.last.checkedAt < this.ttlMs) return Promise.resolve(this.last);
    this.probing ??= this.probe()
      .then(
        (): ReadinessReport => ({ ready: true, checkedAt: Date.now(), source: 'probe' }),
        (err: Error): ReadinessReport => ({ ready: false, cause: err.message, checkedAt: Date.now(), source: 'probe' }),
      )
      .then((report) => {
        this.probing = undefined;
        this.last = report;
        return report;
      });
    return this.probing;
  }
}
