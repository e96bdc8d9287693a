/**
 * Only the "Against other gateways" section of `npm run bench` (bench/lib/peers.ts): the proxy,
 * the bare relay, mcp-proxy and supergateway in alternating batches, with as many rounds as
 * asked, so that ratios settle on a busy machine. The proxy runs with bench/proxy.yaml: the
 * access log (info), metrics and readiness as by default, and the per-client limits on but lifted
 * (the default 100 requests per second would refuse the benchmark's own calls).
 *
 *   npm run build && BENCH_ROUNDS=8 BENCH_CALLS=8000 node --import tsx bench/peers.ts
 */
import { killAllNow, stopAll } from './lib/procs.js';
import { comparePeers, renderPeers } from './lib/peers.js';
import { upstreamDefs } from './lib/scenarios.js';
import { loadSettings } from './lib/settings.js';

const settings = loadSettings();
process.on('exit', killAllNow);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void stopAll().finally(() => process.exit(130)));
const started = Date.now();
const log = (line: string) => process.stderr.write(`[peers ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${line}\n`);
const lean = upstreamDefs({
  calls: settings.calls,
  callsEverything: settings.callsEverything,
  concCalls: settings.concCalls,
  concCallsEverything: settings.concCallsEverything,
}).lean;
try {
  const rows = await comparePeers(lean, settings, log);
  process.stdout.write(`${renderPeers(rows, lean)}\n`);
} finally {
  await stopAll();
}
