/**
 * Cost of a server variant's view of `tools/list` for a 200-tool upstream, in this process:
 * checking the request, filtering and rewriting the list (overrides, schema simplification),
 * wrapping the cursor, and serialising the new message. Passthrough relays the upstream bytes
 * and does none of it. CPU from process.cpuUsage(); bounded by a count and a time cap.
 *
 *   node --import tsx bench/variants.ts        (npm run bench runs it)
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import pino from 'pino';
import { VariantCatalog, VariantScope } from '../src/extensions/server-variants/scope.js';
import { serverVariantsSchema, VARIANT_META_KEY } from '../src/extensions/server-variants/variants.js';
import { smoke } from './lib/settings.js';

const log = pino({ level: 'silent' });
const tools = Array.from({ length: 200 }, (_, i) => ({
  name: `${i % 4 === 0 ? 'admin' : 'tool'}_${i}`,
  description: `Tool number ${i}. It does one thing well. It has a longer explanation with examples and caveats.`,
  inputSchema: {
    type: 'object',
    required: ['id'],
    properties: {
      id: { type: 'string', description: 'The id.' },
      verbose: { type: 'boolean', description: 'More output.' },
      limit: { type: 'number', description: 'At most this many.' },
    },
  },
}));
const catalog = new VariantCatalog(
  serverVariantsSchema.parse({
    variants: [
      { id: 'full', description: 'Everything' },
      {
        id: 'compact',
        description: 'No admin tools, short descriptions, required arguments only',
        tools: { exclude: ['admin_*'] },
        toolOverrides: Object.fromEntries(tools.slice(0, 50).map((t) => [t.name, { description: 'Short.' }])),
        simplifySchemas: { dropOptional: true, dropDescriptions: true },
      },
    ],
  }),
);
const scope = new VariantScope(catalog, log);
scope.onInitialize({ extensions: { 'io.modelcontextprotocol/server-variants': { variantHints: { hints: {} } } } });
const response = { jsonrpc: '2.0', id: 1, result: { tools, nextCursor: 'page-2' } };
const request = { jsonrpc: '2.0' as const, id: 1, method: 'tools/list', params: { _meta: { [VARIANT_META_KEY]: 'compact' } } };

function once(): number {
  const check = scope.check(request);
  const variant = check && 'variant' in check ? check.variant! : 'full';
  const viewed = scope.view('tools/list', response.result, variant);
  return JSON.stringify({ ...response, result: viewed }).length;
}

for (let i = 0; i < 200; i++) once(); // warm-up
const start = process.cpuUsage();
const wall = Date.now();
let calls = 0;
let bytes = 0;
while (calls < 20_000 && Date.now() - wall < smoke(2000, 20)) {
  bytes = once();
  calls++;
}
const used = process.cpuUsage(start);
const ms = (used.user + used.system) / 1000 / calls;
const report = [
  '## 6. Server-variant view of tools/list (200 tools, in process)',
  '',
  'Per list: request check, filter (50 admin tools excluded), 50 description overrides, input-schema simplification,',
  `cursor wrap, and serialising the new message (${(JSON.stringify(response).length / 1024).toFixed(0)} KB in, ${(bytes / 1024).toFixed(0)} KB out). Passthrough does none of it. Target: ≤ 0.3 ms added per list.`,
  '',
  `| calls | **ms / list** | target |`,
  `|---:|---:|---|`,
  `| ${calls} | **${ms.toFixed(3)}** | ${ms <= 0.3 ? 'PASS' : 'FAIL'} (≤ 0.3) |`,
  '',
].join('\n');
process.stdout.write('\n' + report);
if (!existsSync('.bench')) mkdirSync('.bench');
appendFileSync('.bench/report.md', '\n' + report);
