/**
 * The proxy's memory: RSS idle, and with many open HTTP sessions against an HTTP upstream.
 * Sessions are opened with plain fetch (initialize + notifications/initialized), kept open,
 * then DELETEd.
 */
import { readdirSync } from 'node:fs';
import { rssKb, startEverythingHttp, startFaultyHttp, startLeanHttp, startProxy, type Running } from './procs.js';

export interface MemoryResult {
  upstream: string;
  sessionsWanted: number;
  sessionsOpened: number;
  /** Sessions the proxy's /healthz reported while they were open. */
  sessionsReported: number | undefined;
  idleKb: number;
  /** After opening and DELETEing a few sessions (lazy code paths and pools created). */
  warmKb: number;
  /** With `half` sessions open (on the way to all of them). */
  half: number;
  halfKb?: number;
  halfFds?: number;
  openKb: number;
  afterCloseKb: number;
  idleFds: number;
  openFds: number;
  openSeconds: number;
  capped: boolean;
}

const INIT = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-mem', version: '1' } },
};
export const WARM_SESSIONS = 20;

export async function openSession(url: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(INIT),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await init.text();
  const id = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !id || !text.includes('"result"')) throw new Error(`initialize failed: ${init.status} ${text.slice(0, 300)}`);
  const version = /"protocolVersion":"([^"]+)"/.exec(text)?.[1] ?? '2025-11-25';
  const note = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': id,
      'mcp-protocol-version': version,
    },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    signal: AbortSignal.timeout(10_000),
  });
  await note.arrayBuffer();
  if (note.status !== 202) throw new Error(`notifications/initialized got HTTP ${note.status}`);
  return id;
}

async function deleteSessions(url: string, ids: string[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < ids.length) {
        const id = ids[next++];
        const res = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': id }, signal: AbortSignal.timeout(10_000) }).catch(
          () => undefined,
        );
        await res?.arrayBuffer().catch(() => undefined);
      }
    }),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fdCount = (pid: number) => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
};

export async function measureMemory(kind: 'faulty' | 'everything' | 'lean', sessions: number, maxMs: number): Promise<MemoryResult> {
  let upstream: Running | undefined;
  let proxy: Running | undefined;
  const ids: string[] = [];
  try {
    upstream = await (kind === 'faulty' ? startFaultyHttp() : kind === 'everything' ? startEverythingHttp() : startLeanHttp());
    proxy = await startProxy(upstream.url);
    const url = proxy.url;
    await sleep(1000); // start-up probe done, heap settled
    const idleKb = rssKb(proxy.pid);
    const idleFds = fdCount(proxy.pid);

    const warm: string[] = [];
    for (let i = 0; i < WARM_SESSIONS; i++) warm.push(await openSession(url));
    await deleteSessions(url, warm);
    await sleep(500);
    const warmKb = rssKb(proxy.pid);

    const t0 = performance.now();
    const deadline = t0 + maxMs;
    const half = Math.floor(sessions / 2);
    let halfKb: number | undefined;
    let halfFds: number | undefined;
    let pausedMs = 0;
    while (ids.length < sessions && performance.now() < deadline) {
      ids.push(await openSession(url));
      if (ids.length === half && half > 0) {
        await sleep(1500);
        pausedMs += 1500;
        halfKb = rssKb(proxy.pid);
        halfFds = fdCount(proxy.pid);
      }
    }
    const openSeconds = (performance.now() - t0 - pausedMs) / 1000;
    const opened = ids.length;
    await sleep(1500); // let the per-session upstream GET streams open
    const openKb = rssKb(proxy.pid);
    const openFds = fdCount(proxy.pid);
    const health = (await fetch(new URL('/healthz', url))
      .then((r) => r.json())
      .catch(() => undefined)) as { sessions?: number } | undefined;

    await deleteSessions(url, ids.splice(0));
    await sleep(1000);
    const afterCloseKb = rssKb(proxy.pid);
    return {
      upstream: kind,
      sessionsWanted: sessions,
      sessionsOpened: opened,
      sessionsReported: health?.sessions,
      idleKb,
      warmKb,
      half,
      halfKb,
      halfFds,
      openKb,
      afterCloseKb,
      idleFds,
      openFds,
      openSeconds,
      capped: opened < sessions,
    };
  } finally {
    if (proxy && ids.length) await deleteSessions(proxy.url, ids).catch(() => undefined);
    await proxy?.stop();
    await upstream?.stop();
  }
}
