/**
 * Tokens saved by each built-in rule on recorded answers of real servers (test/recordings,
 * refreshed by `npm run record`): every result goes through a session negotiating the tags, as
 * in the proxy, and the text a model reads is counted before and after (o200k_base). Then the
 * catalog rows: the recorded tool catalogs of seven real servers (test/recordings/catalog.json,
 * `npm run record:catalog`), full and as a client declaring `verbosity=compact` lists them.
 *
 *   node --import tsx bench/tokens.ts        (npm run tokens; npm run bench runs it too)
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import pino from 'pino';
import { builtinChain, type BoundFilters } from '../src/core/filters.js';
import { VariantCatalog } from '../src/extensions/server-variants/scope.js';
import { serverVariantsSchema } from '../src/extensions/server-variants/variants.js';
import { countTokensOf, loadTokenizer } from '../src/ops/token-counts.js';
import { DEFAULT_RULES } from '../src/rules/defaults.js';
import { builtinTransformers } from '../src/transformers/index.js';
import { compileRules, type RuleConfig } from '../src/rules/compile.js';
import { loadCatalog } from '../test/recordings/record-catalog.js';
import { searchTools } from '../src/core/tool-search.js';

interface Recorded {
  server: string;
  method: string;
  name?: string;
  result: Record<string, unknown>;
}

const transformers = builtinTransformers();
/** One transformer alone, on every result it shapes. */
const only = (name: string): RuleConfig[] => [
  {
    name,
    when: { method: ['tools/call', 'resources/read', 'prompts/get', 'tools/list', 'prompts/list', 'resources/list'], features: [] },
    apply: [{ [name]: {} }],
    onError: 'pass',
  },
];
const CASES: Array<[tags: string[], what: string, rules: RuleConfig[]]> = [
  [['verbosity=compact'], 'default rules: trim, then tabular', DEFAULT_RULES],
  [['verbosity=compact'], 'trim alone', only('trim')],
  [['verbosity=compact'], 'tabular alone (TOON)', only('tabular')],
  [['format=json'], 'default rules: json-extract', DEFAULT_RULES],
  [['format=markdown'], 'default rules: markdown', DEFAULT_RULES],
  [['format=text'], 'default rules: plain-text', DEFAULT_RULES],
  [['verbosity=compact', 'format=text'], 'default rules: trim, plain-text', DEFAULT_RULES],
];

const dir = new URL('../test/recordings/', import.meta.url);
const recordings: Recorded[] = readdirSync(dir)
  .filter((f) => f.endsWith('.json') && f !== 'catalog.json')
  .flatMap((f) => JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as Recorded[]);
const count = await loadTokenizer();
const log = pino({ level: 'silent' });

const rows: string[] = [];
for (const [tags, what, config] of CASES) {
  const rules = compileRules(config, transformers);
  const sessions = new Map<string, BoundFilters>();
  let changed = 0;
  let before = 0;
  let after = 0;
  let all = 0;
  const servers = new Set<string>();
  for (const r of recordings) {
    let n = sessions.get(r.server);
    if (!n) {
      n = builtinChain({ rules, variants: new VariantCatalog(serverVariantsSchema.parse({})) }).forSession(log);
      n.onInitialize({
        capabilities: { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features: tags } } },
      });
      sessions.set(r.server, n);
    }
    const shaped = await n.shape(r.method, r.name, r.result);
    const tokens = countTokensOf(count, r.method, r.result, shaped)!;
    all += tokens.in;
    if (shaped === undefined || tokens.in === tokens.out) continue;
    changed++;
    servers.add(r.server);
    before += tokens.in;
    after += tokens.out;
  }
  const saved = before === 0 ? 0 : (100 * (before - after)) / before;
  rows.push(
    `| ${tags.join(', ')} | ${what} | ${changed} of ${recordings.length} | ${before} → ${after} | **${saved >= 0 ? '−' : '+'}${Math.abs(saved).toFixed(0)} %** | ${((100 * (before - after)) / all).toFixed(1)} % | ${[...servers].join(', ') || '–'} |`,
  );
}

/** A session negotiating `tags` with the built-in rules. */
function session(tags: string[]): BoundFilters {
  const n = builtinChain({
    rules: compileRules(DEFAULT_RULES, transformers),
    variants: new VariantCatalog(serverVariantsSchema.parse({})),
  }).forSession(log);
  n.onInitialize({ capabilities: { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features: tags } } } });
  return n;
}

const catalogRows: string[] = [];
const compact = session(['verbosity=compact']);
const sum = { tools: 0, full: 0, compact: 0, bytesIn: 0, bytesOut: 0 };
for (const server of loadCatalog().servers) {
  const result = { tools: server.tools };
  const shaped = await compact.shape('tools/list', undefined, result);
  const tokens = countTokensOf(count, 'tools/list', result, shaped)!;
  const [bytesIn, bytesOut] = [JSON.stringify(result).length, JSON.stringify(shaped ?? result).length];
  sum.tools += server.tools.length;
  sum.full += tokens.in;
  sum.compact += tokens.out;
  sum.bytesIn += bytesIn;
  sum.bytesOut += bytesOut;
  catalogRows.push(catalogRow(`${server.package} ${server.version}`, server.tools.length, tokens.in, tokens.out, bytesIn, bytesOut));
}
catalogRows.push(catalogRow('**total**', sum.tools, sum.full, sum.compact, sum.bytesIn, sum.bytesOut));
const searching = countTokensOf(count, 'tools/list', searchTools(), undefined)!.in;
const searchNote = `With tools=search a client is listed ${searching} tokens for any catalog: ${((100 * searching) / sum.full).toFixed(1)} % of this one.`;

function catalogRow(what: string, tools: number, full: number, out: number, bytesIn: number, bytesOut: number): string {
  return `| ${what} | ${tools} | ${full} | ${out} | **−${((100 * (full - out)) / full).toFixed(0)} %** | ${bytesIn} → ${bytesOut} |`;
}

const report = [
  `## Tokens a model reads, before and after negotiation (${recordings.length} recorded results, o200k_base)`,
  '',
  '| tags | transformers | results changed | tokens in → out (changed results) | change | of all recorded tokens | servers |',
  '|---|---|---:|---:|---:|---:|---|',
  ...rows,
  '',
  '## Tool catalogs, full and verbosity=compact (test/recordings/catalog.json, tools/list, o200k_base)',
  '',
  '| server | tools | tokens, full | tokens, compact | change | bytes |',
  '|---|---:|---:|---:|---:|---:|',
  ...catalogRows,
  '',
  searchNote,
  '',
].join('\n');
process.stdout.write('\n' + report);
if (!existsSync('.bench')) mkdirSync('.bench');
appendFileSync('.bench/report.md', '\n' + report);
