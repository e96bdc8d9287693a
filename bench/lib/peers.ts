/**
 * The proxy against the other gateways in the same run: mcp-negotiate-proxy (HTTP front, default
 * operations features), mcp-proxy, supergateway (stateful) and a bare node:http relay, each in
 * front of the same stdio server and called by one SDK HTTP client. Batches alternate between
 * the four (ours, bare, mcp-proxy, supergateway, ours, …) on warm sessions, so a shared machine's
 * drift hits all of them alike; only ratios within the run mean anything. The figure is the
 * gateway process's own CPU per relayed call (/proc), its child (the server) not included.
 */
import { batch, pool, ticksToMs, warmUp, type RunResult } from './measure.js';
import { MIN_TICKS } from './report.js';
import { openRoute, type OpenRoute, type Route, type UpstreamDef } from './scenarios.js';
import type { Settings } from './settings.js';

const TARGETS: Array<{ route: Route; label: string }> = [
  { route: 'proxy-a', label: 'mcp-negotiate-proxy' },
  { route: 'bare-relay', label: 'bare node:http relay' },
  { route: 'mcp-proxy', label: 'mcp-proxy 6.7.19' },
  { route: 'supergateway', label: 'supergateway 4.0.0 (--stateful)' },
];

export interface PeerRow {
  label: string;
  /** Gateway CPU ms per relayed call, pooled over the batches. */
  ms?: number;
  calls?: number;
  error?: string;
}

export async function comparePeers(u: UpstreamDef, s: Settings, log: (line: string) => void): Promise<PeerRow[]> {
  const rows: PeerRow[] = TARGETS.map((t) => ({ label: t.label }));
  const opened: Array<OpenRoute | undefined> = [];
  try {
    for (const [i, t] of TARGETS.entries()) {
      try {
        const o = await openRoute({ upstream: u, clients: 1, route: t.route });
        opened.push(o);
        await warmUp(o.sessions, s.warmup, s.warmupSeconds * 1000);
      } catch (err) {
        opened.push(undefined);
        rows[i].error = (err as Error).message.split('\n')[0];
        log(`peers: ${t.label} FAILED ${rows[i].error}`);
      }
    }
    const runs: RunResult[][] = TARGETS.map(() => []);
    const perRound = Math.ceil(u.calls / s.rounds);
    for (let r = 0; r < s.rounds; r++) {
      for (const [i, o] of opened.entries()) {
        if (!o) continue;
        runs[i].push(
          await batch(o.sessions, {
            calls: perRound,
            maxMs: (s.runSeconds * 1000) / s.rounds,
            pids: o.pids(),
            minProxyTicks: MIN_TICKS,
            maxCalls: perRound * 10,
          }),
        );
      }
    }
    for (const [i, list] of runs.entries()) {
      if (!list.length) continue;
      const pooled = pool(list);
      rows[i].calls = pooled.calls;
      rows[i].ms = ticksToMs(pooled.cpu.proxyTicks ?? 0) / pooled.calls;
      log(`peers: ${rows[i].label} ${rows[i].ms.toFixed(3)} ms CPU per call (${pooled.calls} calls)`);
    }
  } finally {
    for (const o of opened) await o?.close();
  }
  return rows;
}

/** The report section: per-call CPU, the ratio to the bare relay, and each gateway's cost above that floor next to ours. */
export function renderPeers(rows: PeerRow[], u: UpstreamDef): string {
  const ours = rows[0].ms;
  const floor = rows[1].ms;
  const lines = [
    '## Against other gateways (same run, alternating batches)',
    '',
    `One SDK HTTP client, \`tools/call\` echo through each gateway to ${u.label} over stdio. CPU is the gateway process's own`,
    "(utime + stime from /proc), per relayed call. Cost above the floor = CPU per call minus the bare relay's.",
    '',
    '| gateway | calls | **CPU ms / call** | × bare relay | cost above the floor | ours ÷ theirs (above the floor) |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    if (r.ms === undefined) {
      lines.push(`| ${r.label} | error: ${r.error ?? 'not measured'} | | | | |`);
      continue;
    }
    const above = floor === undefined ? undefined : r.ms - floor;
    const oursAbove = ours === undefined || floor === undefined ? undefined : ours - floor;
    const share =
      above !== undefined && oursAbove !== undefined && above > 0 && r !== rows[0] && r !== rows[1] ? (oursAbove / above).toFixed(2) : '';
    lines.push(
      `| ${r.label} | ${r.calls} | **${r.ms.toFixed(3)}** | ${floor ? (r.ms / floor).toFixed(2) + '×' : ''} | ${above === undefined ? '' : above.toFixed(3)} | ${share} |`,
    );
  }
  return lines.join('\n');
}
