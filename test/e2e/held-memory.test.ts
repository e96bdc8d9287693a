/**
 * The memory a real proxy holds for clients that left, measured from the outside (the proxy
 * process's resident set, /proc): four clients, each on its own loopback address, leave 40
 * unfetched tasks of 2 MiB results and 8 dropped resumable streams of 3 MiB answers behind. The
 * proxy's growth stays within their shares of listen.heldBytes (4 × 32 MiB) and a generous slack
 * for the garbage collector, where it used to hold every result and every answer.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { postAndDrop, sessionFrom, tasksFrom } from '../helpers/from-address.js';
import { commandLine, eventually, fixtureArgv, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { metricIn } from '../helpers/raw.js';

const MiB = 1024 * 1024;
const CLIENTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
/** listen.heldBytes.perClient by default. */
const SHARE = 32 * MiB;
/** What the collector may leave behind of the ~1 GB of answers that passed through. */
const SLACK = 160 * MiB;

/** The resident set of a process, in bytes (`VmRSS`), and its peak (`VmHWM`). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Upstream `tools/call`s finished, whatever their outcome (on a loaded machine some may time out). */
async function upstreamCalls(proxy: Running): Promise<number> {
  const outcomes = ['ok', 'error', 'timeout', 'closed'];
  const text = await (await fetch(new URL('/metrics', proxy.url))).text();
  const counts = outcomes.map((o) =>
    metricIn(text, `mcp_proxy_upstream_request_duration_seconds_count{method="tools/call",outcome="${o}"}`),
  );
  return counts.reduce((sum, n) => sum + (Number.isNaN(n) ? 0 : n), 0);
}

describe('memory held for clients that left', () => {
  afterAll(stopAll);

  it('stays within the clients’ shares of listen.heldBytes', async () => {
    const proxy = await startProxy(['--config', config()]);
    const pid = proxy.proc.pid!;
    // Warm up what every client's work needs (pooled and isolated upstream sessions), so the baseline has it.
    let calls = 0;
    for (const from of CLIENTS) {
      calls += (await tasksFrom(from, proxy.url, 1, 1)).calls;
      const session = await sessionFrom(from, proxy.url);
      await postAndDrop(from, proxy.url, call(0, 1, 10), session);
      calls++;
    }
    await eventually(async () => (await upstreamCalls(proxy)) >= calls, 20_000, 'the warm-up calls answered');
    const before = memoryOf(pid);

    const work = await Promise.all(
      CLIENTS.map(async (from) => {
        const tasks = await tasksFrom(from, proxy.url, 40, 2 * MiB);
        expect(tasks.ids).toHaveLength(40);
        const session = await sessionFrom(from, proxy.url);
        // The answers come after the client dropped each stream (1.5 s later; the window is 30 s).
        await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((i) => postAndDrop(from, proxy.url, call(i, 3 * MiB, 1500), session)));
        return tasks.calls + 8;
      }),
    );
    calls += work.reduce((a, b) => a + b, 0);
    // Measured once the work is over: every call finished upstream, or none finished for 5 s (on a loaded machine a few may never be counted).
    let finished = -1;
    let changedAt = Date.now();
    await eventually(
      async () => {
        const now = await upstreamCalls(proxy);
        if (now !== finished) [finished, changedAt] = [now, Date.now()];
        return finished >= calls || Date.now() - changedAt >= 5_000;
      },
      120_000,
      'the upstream calls to finish',
    );
    console.log(`upstream tools/call finished: ${finished} of ${calls}`);
    const after = memoryOf(pid);
    const growth = after.rss - before.rss;
    console.log(
      `proxy RSS ${mb(before.rss)} → ${mb(after.rss)} MiB (+${mb(growth)}), peak ${mb(after.peak)} MiB; budget ${mb(CLIENTS.length * SHARE)} MiB + slack ${mb(SLACK)} MiB`,
    );
    expect(growth).toBeLessThan(CLIENTS.length * SHARE + SLACK);
  }, 240_000);
});

const mb = (bytes: number) => Math.round(bytes / MiB);

function call(id: number, bytes: number, delayMs: number) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'slow_progress', arguments: { steps: 1, delayMs, resultBytes: bytes }, _meta: { progressToken: `m${id}` } },
  };
}

/** The faulty fixture over stdio; every call from a client that declares tasks becomes one at once; the rest as by default. */
function config(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-held-memory-')), 'proxy.yaml');
  writeFileSync(
    file,
    `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\nmodern:\n  tasks: { answerWithinMs: 0 }\n`,
  );
  return file;
}
