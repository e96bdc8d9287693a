/**
 * A small TCP fault-injection proxy for tests (in the manner of Toxiproxy, which cannot be
 * installed here): it sits between the proxy and an HTTP upstream on 127.0.0.1 and, per the
 * fault currently set, passes bytes through, holds them, trickles them, cuts a connection after
 * some bytes (reset or a clean close, possibly mid-frame), or refuses connections. Faults apply
 * to the upstream → proxy direction, where responses and SSE streams flow. It can also be
 * pointed at another port: an upstream restarted on a port of its own stays at the same URL.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export type Fault =
  | { kind: 'pass' }
  /** Hold every byte from the upstream until the fault changes. */
  | { kind: 'stall' }
  /** Forward `bytes` bytes per `everyMs`. */
  | { kind: 'slow'; bytes: number; everyMs: number }
  /** After `afterBytes` more bytes from the upstream on a connection, cut it: RST, or FIN (a clean close). */
  | { kind: 'cut'; afterBytes: number; how: 'reset' | 'close' }
  /** Take connections and reset them at once (the closest a live listener gets to refusing). */
  | { kind: 'refuse' };

export interface FaultProxy {
  url(path: string): string;
  port: number;
  set(fault: Fault): void;
  /** New connections go to `port` from now on. */
  retarget(port: number): void;
  /** Connections open right now, and in all. */
  open(): number;
  accepted(): number;
  /** Connections a `cut` fault has cut. */
  cuts(): number;
  close(): Promise<void>;
}

export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  let fault: Fault = { kind: 'pass' };
  let accepted = 0;
  let cuts = 0;
  let target = targetPort;
  const pairs = new Set<{ client: Socket; upstream: Socket; budget: number; release(): void }>();
  const budgetOf = (f: Fault) => (f.kind === 'cut' ? f.afterBytes : Infinity);
  const server: Server = createServer((client) => {
    accepted++;
    if (fault.kind === 'refuse') return void client.resetAndDestroy();
    const upstream = connect(target, '127.0.0.1');
    const held: Buffer[] = [];
    let trickle: NodeJS.Timeout | undefined;
    const pair = {
      client,
      upstream,
      budget: budgetOf(fault),
      /** Sends what was held back, in order, once the fault no longer holds bytes. */
      release() {
        if (fault.kind !== 'stall' && fault.kind !== 'slow') for (const b of held.splice(0)) client.write(b);
      },
    };
    pairs.add(pair);
    const end = () => {
      clearInterval(trickle);
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (d) => upstream.write(d));
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    upstream.on('data', (d: Buffer) => {
      if (fault.kind === 'cut') {
        if (d.length < pair.budget) {
          pair.budget -= d.length;
          return void client.write(d);
        }
        client.write(d.subarray(0, pair.budget));
        pair.budget = 0;
        cuts++;
        if (fault.how === 'reset') client.resetAndDestroy();
        else client.end();
        return void upstream.destroy();
      }
      if (fault.kind === 'stall' || fault.kind === 'slow' || held.length > 0) held.push(d);
      else client.write(d);
      if (fault.kind === 'slow' && !trickle) {
        const { bytes, everyMs } = fault;
        trickle = setInterval(() => {
          const next = held[0];
          if (!next) return;
          client.write(next.subarray(0, bytes));
          if (next.length > bytes) held[0] = next.subarray(bytes);
          else held.shift();
        }, everyMs);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    set(next) {
      fault = next;
      // Refusing: connections already open go too, so the next request needs a new one.
      if (next.kind === 'refuse') {
        for (const p of pairs) {
          p.client.resetAndDestroy();
          p.upstream.destroy();
        }
      }
      for (const p of pairs) {
        p.budget = budgetOf(next);
        p.release();
      }
    },
    retarget(port) {
      target = port;
    },
    open: () => pairs.size,
    accepted: () => accepted,
    cuts: () => cuts,
    close: () =>
      new Promise((r) => {
        for (const p of pairs) {
          p.client.destroy();
          p.upstream.destroy();
        }
        server.close(() => r());
      }),
  };
}
