/**
 * Tokens saved by each built-in rule on recorded answers of real servers (test/recordings,
 * refreshed by `npm run record`): every result goes through a session negotiating the tags, as
 * in the proxy, and the text a model reads is counted before and after (o200k_base).
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
  .filter((f) => f.endsWith('.json'))
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

const report = [
  `## Tokens a model reads, before and after negotiation (${recordings.length} recorded results, o200k_base)`,
  '',
  '| tags | transformers | results changed | tokens in → out (changed results) | change | of all recorded tokens | servers |',
  '|---|---|---:|---:|---:|---:|---|',
  ...rows,
  '',
].join('\n');
process.stdout.write('\n' + report);
if (!existsSync('.bench')) mkdirSync('.bench');
appendFileSync('.bench/report.md', '\n' + report);
