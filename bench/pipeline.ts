/**
 * Cost of the default content-negotiation pipeline per result, in this process: the work the
 * proxy adds when a client negotiates (shape the result, then serialise the new message),
 * against passthrough (which relays the upstream's bytes and does neither). One payload kind
 * per built-in transformer at 1 KB, 64 KB and 1 MB, each with the feature tags that make the
 * defaults act on it (pattern-extract, which has no default rule, with the rule of
 * config/examples/weather-prose.yaml in front of them).
 * CPU time from process.cpuUsage(); bounded by a call count and a time cap per case.
 *
 *   node --import tsx bench/pipeline.ts        (npm run bench runs it after the relay benchmark)
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import pino from 'pino';
import { parse as parseYaml } from 'yaml';
import { builtinChain, type BoundFilters } from '../src/core/filters.js';
import { VariantCatalog } from '../src/extensions/server-variants/scope.js';
import { serverVariantsSchema } from '../src/extensions/server-variants/variants.js';
import { DEFAULT_RULES } from '../src/rules/defaults.js';
import { builtinTransformers } from '../src/transformers/index.js';
import { compileRules, ruleSchema, type CompiledRule } from '../src/rules/compile.js';
import { smoke } from './lib/settings.js';

const SIZES = smoke([1024, 64 * 1024, 1024 * 1024], [1024]);
const rules = compileRules(DEFAULT_RULES, builtinTransformers());
const weatherRules = (
  parseYaml(readFileSync(new URL('../config/examples/weather-prose.yaml', import.meta.url), 'utf8')) as {
    contentNegotiation: { rules: unknown[] };
  }
).contentNegotiation.rules;
const withPatterns = compileRules([...weatherRules.map((r) => ruleSchema.parse(r)), ...DEFAULT_RULES], builtinTransformers());
const log = pino({ level: 'silent' });

function fill(unit: (i: number) => string, bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const p = unit(i);
    parts.push(p);
    size += p.length + 1;
  }
  return parts.join('\n').slice(0, bytes);
}

interface Kind {
  kind: string;
  tags: string[];
  text: (bytes: number) => string;
  /** Rules other than the defaults. */
  rules?: CompiledRule[];
  /** The result's content blocks for `text` (default: one text block). */
  blocks?: (text: string) => unknown[];
}

const KINDS: Kind[] = [
  {
    kind: 'prose text → format=json',
    tags: ['agent', 'format=json'],
    text: (n: number) => '## Weather report\n\nMild and mostly dry.\n\n' + fill((i) => `Station ${i}: ${(i * 7) % 31}`, n - 50),
  },
  {
    kind: 'JSON text → format=markdown',
    tags: ['human', 'format=markdown'],
    text: (n: number) => {
      const rows: unknown[] = [];
      for (let i = 0; JSON.stringify(rows).length < n - 60; i++)
        rows.push({ station: `S${i}`, temperature_c: (i * 7) % 31, wind: 'NW', dry: i % 2 === 0 });
      return JSON.stringify({ location: 'Bern', stations: rows });
    },
  },
  {
    kind: 'markdown → format=text',
    tags: ['format=text'],
    text: (n: number) =>
      fill((i) => (i % 10 === 0 ? `## Section ${i}` : `- **Item ${i}**: some [linked](http://x.test/${i}) text with \`code\``), n),
  },
  {
    // trim: a guide with Examples and Tips sections to drop, trailing spaces and blank runs.
    kind: 'markdown guide → verbosity=compact',
    tags: ['verbosity=compact'],
    text: (n: number) => fill((i) => guideSection(i), n),
  },
  {
    // trim minifies the JSON, then tabular writes its array of records as TOON.
    kind: 'JSON records → verbosity=compact',
    tags: ['verbosity=compact'],
    text: (n: number) => {
      const row = (i: number) => ({ station: `S${i}`, temperature_c: (i * 7) % 31, wind: 'NW', dry: i % 2 === 0 });
      const doc = (rows: unknown[]) => JSON.stringify({ location: 'Bern', stations: rows }, null, 2);
      const perRow = doc([row(0), row(1)]).length - doc([row(0)]).length;
      const rows = [row(0)];
      while ((rows.length + 1) * perRow < n - 40) rows.push(row(rows.length));
      while (rows.length > 1 && doc(rows).length > n) rows.pop();
      return doc(rows);
    },
  },
  {
    // pattern-extract: the demo server's weather report, then a long outlook in prose.
    kind: 'weather prose → pattern-extract',
    tags: ['format=json'],
    rules: withPatterns,
    text: (n: number) =>
      WEATHER +
      fill(
        (i) =>
          `Day ${i + 1} brings highs near ${(i * 7) % 31}°C in Bern, with a ${(i * 13) % 100}% chance of showers and light winds from the north-west.`,
        n - WEATHER.length,
      ),
  },
  {
    // audience: a summary for the user beside the details for the assistant; an agent keeps the details.
    kind: 'annotated blocks → agent',
    tags: ['agent'],
    text: (n: number) => fill((i) => `Station ${i} reported ${(i * 7) % 31}°C and light rain at noon.`, n),
    blocks: (text: string) => {
      const cut = Math.max(1, text.indexOf('\n', text.length >> 2));
      return [
        { type: 'text', text: text.slice(0, cut), annotations: { audience: ['user'] } },
        { type: 'text', text: text.slice(cut + 1), annotations: { audience: ['assistant'] } },
      ];
    },
  },
];

const WEATHER = [
  '## Current Weather in Bern',
  '',
  'It is currently 8°C in Bern (Partly cloudy), feeling like 6°C with the wind. There is a 20% chance of precipitation in the next few hours.',
  '',
  'Temperature: 8°C',
  'Conditions: Partly cloudy',
  'Humidity: 72%',
  'Wind: 12 km/h from NW',
  'UV index: 3',
  '',
].join('\n');

function guideSection(i: number): string {
  const title = i % 4 === 1 ? 'Examples' : i % 4 === 3 ? 'Tips' : `Step ${i}`;
  return [
    `## ${title}`,
    '',
    `Run \`tool ${i}\` with the station id and a date.   `,
    'It answers with the readings of that day.',
    '',
    '',
    '',
    `- Option ${i}: the unit to report in`,
    '',
  ].join('\n');
}

function wireMessage(k: Kind, text: string) {
  return { jsonrpc: '2.0', id: 1, result: { content: k.blocks ? k.blocks(text) : [{ type: 'text', text }] } };
}

function negotiation(tags: string[], chainRules: CompiledRule[] = rules): BoundFilters {
  const n = builtinChain({ rules: chainRules, variants: new VariantCatalog(serverVariantsSchema.parse({})) }).forSession(log);
  n.onInitialize({ capabilities: { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features: tags } } } });
  return n;
}

/** CPU ms per call of `fn`, after a warm-up, bounded by a call count and a time cap. */
async function cpuPerCall(fn: () => unknown, maxCalls: number): Promise<{ ms: number; calls: number }> {
  for (let i = 0; i < 20; i++) await fn(); // warm-up
  const start = process.cpuUsage();
  const wall = Date.now();
  let calls = 0;
  while (calls < maxCalls && Date.now() - wall < smoke(1500, 20)) {
    await fn();
    calls++;
  }
  const used = process.cpuUsage(start);
  return { ms: (used.user + used.system) / 1000 / calls, calls };
}

/** The plain cost of the message: JSON.parse + JSON.stringify of it, as a relay that parses pays. */
function baseline(k: Kind, text: string, maxCalls: number): Promise<{ ms: number; calls: number }> {
  const wire = JSON.stringify(wireMessage(k, text));
  return cpuPerCall(() => JSON.stringify(JSON.parse(wire)), maxCalls);
}

async function measure(k: Kind, text: string): Promise<{ ms: number; calls: number; outBytes: number }> {
  const n = negotiation(k.tags, k.rules);
  const message = wireMessage(k, text);
  const once = async () => {
    const shaped = await n.shape('tools/call', 'get_weather', message.result);
    return JSON.stringify(shaped ? { ...message, result: shaped } : message).length;
  };
  const outBytes = await once();
  return { ...(await cpuPerCall(once, maxCallsFor(text))), outBytes };
}

const maxCallsFor = (text: string) => Math.max(20, Math.floor((200 * 1024 * 1024) / text.length));

const lines = [
  '## 5. Content-negotiation pipeline cost per result (default rules, in process; pattern-extract with config/examples/weather-prose.yaml)',
  '',
  'CPU per result to shape it and serialise the new message, against the plain cost of the same message',
  '(JSON.parse + JSON.stringify of it) measured in the same run: the ratio is what negotiation costs in units',
  'of parsing the message. Passthrough (no tags) relays the upstream bytes and pays neither.',
  '',
  '| payload | tags | size | calls | **ms / result** | µs per KB | parse + stringify ms | **ratio** | output size |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|',
];
for (const k of KINDS) {
  for (const size of SIZES) {
    const text = k.text(size);
    const r = await measure(k, text);
    const base = await baseline(k, text, maxCallsFor(text));
    const kb = text.length / 1024;
    lines.push(
      `| ${k.kind} | ${k.tags.join(', ')} | ${kb >= 1024 ? (kb / 1024).toFixed(1) + ' MB' : kb.toFixed(0) + ' KB'} | ${r.calls} | **${r.ms.toFixed(3)}** | ${((r.ms * 1000) / kb).toFixed(2)} | ${base.ms.toFixed(3)} | **${(r.ms / base.ms).toFixed(1)}×** | ${(r.outBytes / 1024).toFixed(0)} KB |`,
    );
  }
}
const report = lines.join('\n') + '\n';
process.stdout.write('\n' + report);
if (!existsSync('.bench')) mkdirSync('.bench');
appendFileSync('.bench/report.md', '\n' + report);
