/**
 * Memory per unread answer: clients that ask for a large answer and never read it. Each client
 * opens a session, sends one `tools/call` for an answer of BENCH_UNREAD_BYTES (the lean server's
 * `echo` with `bytes`), reads the first bytes of the reply and then stops reading. The proxy's RSS
 * growth, once it settles, divided by the answers' size says how often the proxy holds each one
 * (1.0: once, as bytes). Half of the clients take JSON replies, half SSE; both upstream kinds run.
 *
 *   node --import tsx bench/unread.ts
 */
import { connect, type Socket } from 'node:net';
import { commandLine, LEAN_MAIN, rssKb, startLeanHttp, startProxy, stopAll, type Running } from './lib/procs.js';
import { openSession } from './lib/memory.js';
import { int, smoke } from './lib/settings.js';

const CLIENTS = smoke(int('BENCH_UNREAD_CLIENTS', 18, 1, 200), 2);
const BYTES = smoke(int('BENCH_UNREAD_BYTES', 4 << 20, 1024, 64 << 20), 256 << 10);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends the call on a raw socket and resolves once the reply's first bytes arrived; the socket then reads no more. */
function askAndStall(url: string, session: string, sse: boolean): Promise<Socket> {
  const { hostname, port, pathname } = new URL(url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { bytes: BYTES } } });
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST ${pathname} HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\n` +
          `accept: ${sse ? 'text/event-stream' : 'application/json'}\r\nmcp-session-id: ${session}\r\nmcp-protocol-version: 2025-11-25\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    });
    socket.setTimeout(20_000, () => socket.destroy(new Error('no reply within 20 s')));
    socket.once('data', (first) => {
      if (!first.toString('latin1', 0, 12).startsWith('HTTP/1.1 200'))
        return reject(new Error(`reply: ${first.toString('latin1', 0, 200)}`));
      socket.setTimeout(0);
      socket.pause();
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** RSS once it stops moving (two samples 250 ms apart within 1 MiB), at most 15 s. */
async function settledRssKb(pid: number): Promise<number> {
  let last = rssKb(pid);
  for (let i = 0; i < 60; i++) {
    await sleep(250);
    const now = rssKb(pid);
    if (Math.abs(now - last) < 1024) return now;
    last = now;
  }
  return last;
}

interface Outcome {
  upstream: string;
  growthKb: number;
  perAnswerMb: number;
  held: number;
}

async function measure(upstream: string, label: string): Promise<Outcome> {
  const proxy: Running = await startProxy(upstream);
  const sockets: Socket[] = [];
  try {
    // Warm-up: one answer of the same size read whole, each way, so that lazy paths and pools exist.
    for (const sse of [false, true]) {
      const res = await fetch(proxy.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: sse ? 'text/event-stream' : 'application/json',
          'mcp-session-id': await openSession(proxy.url),
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { bytes: BYTES } } }),
      });
      await res.arrayBuffer();
    }
    const before = await settledRssKb(proxy.pid);
    const sessions: string[] = [];
    for (let i = 0; i < CLIENTS; i++) sessions.push(await openSession(proxy.url));
    const opened = await settledRssKb(proxy.pid); // sessions (and stdio processes' pipes) without answers
    for (let i = 0; i < CLIENTS; i++) sockets.push(await askAndStall(proxy.url, sessions[i], i % 2 === 1));
    const after = await settledRssKb(proxy.pid);
    const growthKb = after - opened;
    const perAnswerMb = growthKb / 1024 / CLIENTS;
    console.log(
      `${label}: RSS ${(before / 1024).toFixed(1)} MiB warm, ${(opened / 1024).toFixed(1)} MiB with ${CLIENTS} sessions, ${(after / 1024).toFixed(1)} MiB with their answers unread`,
    );
    return { upstream: label, growthKb, perAnswerMb, held: (growthKb * 1024) / (CLIENTS * BYTES) };
  } finally {
    for (const s of sockets) s.destroy();
    await proxy.stop();
  }
}

async function main(): Promise<void> {
  const lean = await startLeanHttp();
  const outcomes: Outcome[] = [];
  try {
    outcomes.push(await measure(commandLine([process.execPath, LEAN_MAIN]), 'stdio upstream'));
    outcomes.push(await measure(lean.url, 'HTTP upstream'));
  } finally {
    await stopAll();
  }
  const mb = (BYTES / (1 << 20)).toFixed(BYTES >= 1 << 20 ? 0 : 2);
  console.log(
    `\n## Unread answers: ${CLIENTS} clients that never read a ${mb} MiB answer (${((CLIENTS * BYTES) / (1 << 20)).toFixed(0)} MiB in all)\n`,
  );
  console.log('| upstream | proxy RSS growth | per answer | × answer size |');
  console.log('|---|---:|---:|---:|');
  for (const o of outcomes)
    console.log(`| ${o.upstream} | ${(o.growthKb / 1024).toFixed(1)} MiB | ${o.perAnswerMb.toFixed(2)} MiB | **${o.held.toFixed(2)}×** |`);
  console.log("\nRSS after it settles; the kernel's socket buffers hold part of each answer outside the proxy, so below 1.0× is possible.");
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
