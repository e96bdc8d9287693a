/**
 * `mcp-negotiate-proxy explain`: which rules match a client's feature tags for one method and
 * name, in order, and what they make of a result, without any upstream. The tags are the
 * client's own (`--features`) layered over those it is assigned: its profile (chosen by how it
 * arrives: `--principal`, `--path`, `--client-name`) and its MCP-Features header. The result
 * comes from a JSON file (`--input`, a result object or a whole JSON-RPC response) or a built-in
 * sample. For a catalog (tools/list and the other lists), the tokens of each entry follow.
 */
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { UsageError } from '../jsonrpc/errors.js';
import { isObject } from '../jsonrpc/message.js';
import type { Arrival, Profiles } from '../core/profiles.js';
import { parseFeatures, parseTag } from '../mcp/features.js';
import { ruleMatches, runPipeline, type PipelineOutcome } from '../rules/run.js';
import { tagsNotActedOn, unregisteredTag } from '../rules/tags.js';
import { CALL_TOOL, SEARCH_TOOL, searchTools, ToolSearch } from '../core/tool-search.js';
import type { CompiledRule } from '../rules/compile.js';
import type { McpResult } from '../transformers/contract.js';
import { countTokensOf, loadTokenizer, type CountTokens } from '../ops/token-counts.js';

export interface ExplainRequest {
  features: string[];
  method: string;
  name?: string;
  input?: string;
  outputSchema?: Record<string, unknown>;
  /** How the client arrives: what chooses its profile, and its MCP-Features header. */
  arrival?: Arrival;
}

const SAMPLE_TEXT = [
  '## Current Weather in Bern',
  '',
  'It is mild for the season, with clouds clearing in the afternoon.',
  '',
  'Temperature: 8',
  'Humidity: 72',
  'Conditions: mostly cloudy',
  '',
  '### Forecast',
  '',
  '| Day | High | Low |',
  '|---|---|---|',
  '| Tomorrow | 9 | 2 |',
  '',
  '## Tips',
  '',
  '- Dress in layers.',
].join('\n');

function sample(method: string): McpResult {
  switch (method) {
    case 'resources/read':
      return {
        contents: [{ uri: 'demo://sample', mimeType: 'application/json', text: JSON.stringify({ location: 'Bern', temperature_c: 8 }) }],
      };
    case 'prompts/get':
      return { messages: [{ role: 'user', content: { type: 'text', text: SAMPLE_TEXT } }] };
    case 'tools/list':
      return {
        tools: [
          {
            name: 'get_weather',
            description: 'Current weather for a city. Includes a forecast.',
            inputSchema: { type: 'object', properties: { city: { type: 'string', description: 'City name.' } } },
          },
        ],
      };
    default:
      return { content: [{ type: 'text', text: SAMPLE_TEXT }] };
  }
}

export async function explain(rules: CompiledRule[], req: ExplainRequest, profiles?: Profiles): Promise<string> {
  const assigned = profiles?.assign(req.arrival ?? { principal: '' });
  const parsed = parseFeatures(req.features, {}, [], assigned?.tags);
  const lines: string[] = [];
  const { principal, path, clientName } = req.arrival ?? { principal: '' };
  if (assigned?.profile)
    lines.push(`profile: ${assigned.profile.name} (${assigned.profile.why})${assigned.variant ? `, variant ${assigned.variant}` : ''}`);
  else if (principal || path || clientName)
    lines.push('profile: none (no profile is chosen for this client, and the config has no "default" profile)');
  if (assigned?.header) lines.push(`MCP-Features header: ${assigned.header.tags.join(', ') || '(no valid tags)'}`);
  for (const { tag, reason } of assigned?.header?.ignored ?? []) lines.push(`  ignored ${JSON.stringify(tag)}: ${reason}`);
  if (assigned?.tags.length) {
    lines.push(`assigned: ${assigned.tags.join(', ')} (the client's own tags win on each axis they name)`);
    lines.push(`declared by the client: ${req.features.join(', ') || '(none)'}`);
  }
  for (const raw of parsed.overridden)
    lines.push(`  ${raw} (assigned) left out: the client's own declaration names ${raw.replace(/^!/, '').split(/!?=/)[0]}`);
  lines.push(`features: ${parsed.features.toTags().join(', ') || '(none)'}`);
  for (const { tag, reason } of parsed.ignored) lines.push(`  ignored ${JSON.stringify(tag)}: ${reason}`);
  for (const raw of tagsNotActedOn(rules, [...parsed.accepted, ...(assigned?.tags ?? []).filter((t) => !parsed.overridden.includes(t))])) {
    const tag = parseTag(raw);
    const why = 'invalid' in tag ? undefined : unregisteredTag(tag);
    lines.push(`  warning: no rule acts on ${raw}${why ? ` (${why})` : ''}; results are not shaped for it`);
  }
  lines.push(`request: ${req.method}${req.name ? ` ${req.name}` : ''}`, '', 'rules, in order:');
  for (const rule of rules) {
    const hit = ruleMatches(rule, req.method, req.name, parsed.features);
    const steps = rule.verbatim ? 'verbatim (exact contents, never reshaped)' : rule.steps.map((s) => s.name).join(' → ');
    lines.push(`  ${hit ? '✔' : '·'} ${rule.label}: ${steps}`);
  }
  const raw = req.input ? readInput(req.input) : sample(req.method);
  const input: unknown = raw && typeof raw === 'object' && 'result' in raw && 'jsonrpc' in raw ? raw.result : raw;
  if (!isObject(input))
    throw new UsageError(
      `--input ${req.input}: expected a result object or a JSON-RPC response, got ${Array.isArray(input) ? 'an array' : typeof input}`,
    );
  const outcome: Pick<PipelineOutcome, 'result' | 'applied' | 'verbatim'> = parsed.features.isEmpty
    ? { result: undefined, applied: [] }
    : await runPipeline(rules, input, {
        method: req.method,
        name: req.name,
        features: parsed.features,
        era: 'legacy',
        outputSchema: req.outputSchema,
        log: pino({ level: 'silent' }),
      });
  lines.push('', `input (${req.input ?? 'built-in sample'}):`, JSON.stringify(input, null, 2), '');
  lines.push(
    outcome.applied.length ? `applied: ${outcome.applied.join(', ')}` : 'applied: nothing (the client gets the upstream result unchanged)',
  );
  if (outcome.verbatim) {
    const added = outcome.result ? ' (only structuredContent was added)' : '';
    lines.push(`left alone: ${outcome.verbatim}, so its text reaches the client exactly${added}`);
  }
  lines.push('', 'output:', JSON.stringify(outcome.result ?? input, null, 2));
  const count = await loadTokenizer();
  const tokens = countTokensOf(count, req.method, input, outcome.result)!;
  const change =
    tokens.in === 0
      ? ''
      : ` (${tokens.out <= tokens.in ? '−' : '+'}${Math.abs(Math.round((100 * (tokens.in - tokens.out)) / tokens.in))} %)`;
  lines.push('', `tokens a model reads (o200k_base): ${tokens.in} in → ${tokens.out} out${change}`);
  lines.push(...perEntry(count, input, outcome.result));
  if (req.method === 'tools/list' && ToolSearch.asked(parsed.features)) {
    const listed = countTokensOf(count, req.method, searchTools(), undefined)!.in;
    lines.push(
      '',
      `tools=search: the client is listed ${SEARCH_TOOL} and ${CALL_TOOL} in place of this catalog (${listed} tokens), ` +
        `and ${SEARCH_TOOL} returns the tools above that match what it asks for, as shaped here`,
    );
  }
  return lines.join('\n');
}

const LIST_KEYS = ['tools', 'prompts', 'resources', 'resourceTemplates'];

/** For a catalog (a list result), the tokens of each entry before and after, in the list's order. */
function perEntry(count: CountTokens, input: McpResult, output: McpResult | undefined): string[] {
  const key = LIST_KEYS.find((k) => Array.isArray(input[k]));
  if (!key) return [];
  const before = input[key] as unknown[];
  const after = Array.isArray(output?.[key]) ? (output[key] as unknown[]) : before;
  const lines = [`per entry of ${key} (tokens in → out):`];
  before.forEach((entry, i) => {
    const name = isObject(entry) && typeof entry.name === 'string' ? entry.name : `#${i}`;
    lines.push(`  ${name}: ${count(JSON.stringify(entry))} → ${count(JSON.stringify(after[i] ?? entry))}`);
  });
  return lines;
}

/** The --input file as JSON, or a usage error that says what is wrong with it. */
function readInput(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`--input ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--input ${path}: not JSON (${(err as Error).message})`);
  }
}
