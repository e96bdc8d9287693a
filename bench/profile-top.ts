/**
 * Summarises V8 .cpuprofile files (from `node --cpu-prof`): top functions by self time, and
 * self time grouped by package / area. Usage:
 *
 *   BENCH_PROFILE_DIR=.bench/profiles BENCH_UPSTREAMS=lean npm run bench
 *   node --import tsx bench/profile-top.ts .bench/profiles/<file>.cpuprofile [more files] [--top 25]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function area(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(idle)') return 'idle';
  if (fn === '(program)') return '(program: native, not attributed)';
  if (!url) return '(native / builtins)';
  const nm = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (nm) return nm[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0] === 'internal' ? 'internal/' + url.split('/')[1] : url.slice(5)}`;
  const dist = url.match(/\/dist\/(.+)$/);
  if (dist) return `proxy dist/${dist[1].split('/')[0]}`;
  return url;
}

function summarise(file: string, top: number): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  // Self time per node: sum of the time deltas of samples that landed in it.
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  const byFn = new Map<string, number>();
  const byArea = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const n of p.nodes) {
    const us = self.get(n.id) ?? 0;
    if (!us) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const a = area(url, functionName);
    if (a === 'idle') {
      idle += us;
      continue;
    }
    total += us;
    const key = `${functionName || '(anonymous)'}  ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    byArea.set(a, (byArea.get(a) ?? 0) + us);
  }
  const pct = (us: number) => ((us / total) * 100).toFixed(1).padStart(5) + ' %';
  const lines = [
    `## ${file}`,
    '',
    `busy ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms, wall ${((p.endTime - p.startTime) / 1000).toFixed(0)} ms`,
    '',
    'self time by area:',
  ];
  for (const [k, v] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 20))
    lines.push(`  ${pct(v)}  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`);
  lines.push('', `top ${top} functions by self time:`);
  for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top))
    lines.push(`  ${pct(v)}  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`);
  return lines.join('\n');
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 25;
if (args.length === 0) {
  process.stderr.write('usage: node --import tsx bench/profile-top.ts <file.cpuprofile>... [--top N]\n');
  process.exit(2);
}
for (const file of args) process.stdout.write(summarise(file, top) + '\n\n');
