/**
 * The benchmark's scenarios: one upstream server, reached directly or through the proxy, over
 * each transport combination, by one or several SDK clients.
 *
 *   (a) HTTP front -> stdio upstream    direct baseline: SDK stdio client to the same server
 *   (b) stdio front -> stdio upstream   direct baseline: SDK stdio client to the same server
 *   (c) HTTP front -> HTTP upstream     direct baseline: SDK HTTP client to the same server
 */
import { connectHttp, connectStdio, type BenchSession, type EchoShape } from './clients.js';
import type { Pids } from './measure.js';
import {
  EVERYTHING_MAIN,
  LEAN_MAIN,
  childPids,
  commandLine,
  proxyStdioArgv,
  startEverythingHttp,
  startLeanHttp,
  startPeer,
  startProxy,
  type Peer,
  type Running,
} from './procs.js';

export interface UpstreamDef {
  key: 'lean' | 'everything';
  label: string;
  stdioArgv: string[];
  startHttp(): Promise<Running>;
  shape: EchoShape;
  /** Measured calls: sequential run, concurrent run (total). */
  calls: number;
  concCalls: number;
}

export function upstreamDefs(s: {
  calls: number;
  callsEverything: number;
  concCalls: number;
  concCallsEverything: number;
  leanSse?: boolean;
}): Record<string, UpstreamDef> {
  return {
    lean: {
      key: 'lean',
      label: 'lean (bench/lean-server.mjs, no SDK)',
      stdioArgv: [process.execPath, LEAN_MAIN],
      startHttp: () => startLeanHttp(s.leanSse),
      shape: { argName: 'text' },
      calls: s.calls,
      concCalls: s.concCalls,
    },
    everything: {
      key: 'everything',
      label: 'server-everything (SDK McpServer)',
      stdioArgv: [process.execPath, EVERYTHING_MAIN, 'stdio'],
      startHttp: startEverythingHttp,
      shape: { argName: 'message' },
      calls: s.callsEverything,
      concCalls: s.concCallsEverything,
    },
  };
}

export type Route = 'direct-stdio' | 'direct-http' | 'proxy-a' | 'proxy-b' | 'proxy-c' | Peer;

export const ROUTE_LABEL: Record<Route, string> = {
  'direct-stdio': 'SDK stdio client → server',
  'direct-http': 'SDK HTTP client → server (HTTP)',
  'proxy-a': 'SDK HTTP client → proxy (HTTP front) → server (stdio)',
  'proxy-b': 'SDK stdio client → proxy (stdio front) → server (stdio)',
  'proxy-c': 'SDK HTTP client → proxy (HTTP front) → server (HTTP)',
  'bare-relay': 'SDK HTTP client → bare node:http relay → server (stdio)',
  'fastify-relay': 'SDK HTTP client → the bare relay on fastify → server (stdio)',
  'mcp-proxy': 'SDK HTTP client → mcp-proxy → server (stdio)',
  supergateway: 'SDK HTTP client → supergateway (stateful) → server (stdio)',
};

export interface RoutePlan {
  upstream: UpstreamDef;
  route: Route;
  clients: number;
  /** The upstream's HTTP server, for direct-http and proxy-c. */
  http?: Running;
  profileDir?: string;
}

/** A route set up and connected: its sessions, and the processes whose CPU counts. */
export interface OpenRoute {
  route: Route;
  sessions: BenchSession[];
  /** Read after the sessions are connected (stdio upstreams are spawned per session). */
  pids(): Pids;
  close(): Promise<void>;
}

/** Starts what a route needs (a proxy, for proxied routes) and connects its client sessions. */
export async function openRoute(plan: RoutePlan): Promise<OpenRoute> {
  const { upstream: u, route, clients } = plan;
  const sessions: BenchSession[] = [];
  let proxy: Running | undefined;
  const close = async () => {
    await Promise.allSettled(sessions.map((s) => s.close()));
    await proxy?.stop();
  };
  try {
    let connect: () => Promise<BenchSession>;
    let pids: () => Pids;
    switch (route) {
      case 'direct-stdio':
        connect = () => connectStdio(u.stdioArgv, u.shape);
        pids = () => ({ proxy: [], upstream: sessions.map((s) => s.pid!) });
        break;
      case 'direct-http': {
        const http = need(plan.http);
        connect = () => connectHttp(http.url, u.shape);
        pids = () => ({ proxy: [], upstream: [http.pid] });
        break;
      }
      case 'proxy-a': {
        const p = (proxy = await startProxy(commandLine(u.stdioArgv), plan.profileDir));
        connect = () => connectHttp(p.url, u.shape);
        pids = () => ({ proxy: [p.pid], upstream: childPids(p.pid) });
        break;
      }
      case 'proxy-b': {
        const argv = proxyStdioArgv(commandLine(u.stdioArgv), plan.profileDir);
        connect = () => connectStdio(argv, u.shape);
        pids = () => {
          const proxies = sessions.map((s) => s.pid!);
          return { proxy: proxies, upstream: proxies.flatMap(childPids) };
        };
        break;
      }
      case 'bare-relay':
      case 'fastify-relay':
      case 'mcp-proxy':
      case 'supergateway': {
        const p = (proxy = await startPeer(route, u.stdioArgv));
        connect = () => connectHttp(p.url, u.shape);
        pids = () => ({ proxy: [p.pid], upstream: childPids(p.pid) });
        break;
      }
      case 'proxy-c': {
        const http = need(plan.http);
        const p = (proxy = await startProxy(http.url, plan.profileDir));
        connect = () => connectHttp(p.url, u.shape);
        pids = () => ({ proxy: [p.pid], upstream: [http.pid] });
        break;
      }
    }
    for (let i = 0; i < clients; i++) sessions.push(await connect());
    const expected = route === 'direct-http' || route === 'proxy-c' ? 1 : clients;
    // A proxy's start-up check runs the upstream once more; its process is gone within seconds.
    const until = Date.now() + 30_000;
    for (let seen = pids().upstream.length; seen !== expected; seen = pids().upstream.length) {
      if (Date.now() > until)
        throw new Error(`${route}: expected ${expected} upstream process(es) for CPU accounting, found ${seen} after 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { route, sessions, pids, close };
  } catch (err) {
    if (proxy) (err as Error).message += `\nproxy stderr tail:\n${proxy.tail()}`;
    await close();
    throw err;
  }
}

function need<T>(v: T | undefined): T {
  if (v === undefined) throw new Error('this route needs the upstream HTTP server');
  return v;
}
