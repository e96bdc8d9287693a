/**
 * `verbosity=compact` on a recorded catalog of real servers (test/recordings/catalog.json, 103
 * tools of server-everything, -filesystem, -memory, the GitHub, GitLab and Slack reference
 * servers and the Notion server), through the built-in rules as the proxy runs them: every tool
 * keeps its name, parameters, types, enums, required lists and constraints; every call recorded
 * or generated as valid still validates against the compact schema; and the catalog costs at
 * most half the tokens it did.
 */
import { Ajv } from 'ajv';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { entryContract } from '../../../test/recordings/catalog-contract.js';
import { loadCatalog } from '../../../test/recordings/record-catalog.js';
import { parseFeatures } from '../../mcp/features.js';
import { countTokensOf, loadTokenizer } from '../../ops/token-counts.js';
import { compileRules } from '../../rules/compile.js';
import { DEFAULT_RULES } from '../../rules/defaults.js';
import { runPipeline } from '../../rules/run.js';
import { builtinTransformers } from '../index.js';
import type { McpResult } from '../contract.js';

type Entry = Record<string, unknown>;

const catalog = loadCatalog();
const rules = compileRules(DEFAULT_RULES, builtinTransformers());
const LIMITS = { maxResultBytes: 1024 * 1024, timeBudgetMs: 1000 };

/** A list as a client declaring `tags` gets it from the built-in rules (the upstream's own when nothing changed). */
async function listed(method: string, result: McpResult, tags: string[]): Promise<McpResult> {
  const features = parseFeatures(tags).features;
  const outcome = await runPipeline(rules, result, { method, features, era: 'legacy', log: pino({ level: 'silent' }) }, LIMITS);
  return outcome.result ?? result;
}

describe('verbosity=compact on a recorded catalog of real servers', () => {
  it('records at least 100 tools, of seven servers, with valid calls for each', () => {
    expect(catalog.servers.map((s) => s.server)).toEqual([
      'server-everything',
      'server-filesystem',
      'server-memory',
      'server-github',
      'server-gitlab',
      'server-slack',
      'notion',
    ]);
    const tools = catalog.servers.flatMap((s) => s.tools.map((t) => `${s.server} ${String(t.name)}`));
    expect(tools.length).toBeGreaterThanOrEqual(100);
    const called = new Set(catalog.calls.map((c) => `${c.server} ${c.tool}`));
    expect(tools.filter((t) => !called.has(t))).toEqual([]);
    expect(catalog.calls.filter((c) => c.source === 'recorded').length).toBeGreaterThanOrEqual(20);
    expect(new Set(catalog.calls.filter((c) => c.source === 'written').map((c) => c.server))).toEqual(
      new Set(['server-github', 'server-gitlab', 'server-slack', 'notion']),
    );
  });

  it('keeps every tool callable: names, parameters, types, enums, required lists and constraints', async () => {
    let checked = 0;
    for (const server of catalog.servers) {
      const compact = (await listed('tools/list', { tools: server.tools }, ['verbosity=compact'])).tools as Entry[];
      expect(compact.map((t) => t.name)).toEqual(server.tools.map((t) => t.name));
      compact.forEach((tool, i) => {
        const original = server.tools[i];
        expect(entryContract(tool), `${server.server} ${String(tool.name)}`).toEqual(entryContract(original));
        if (typeof original.description === 'string' && original.description.trim() !== '') {
          expect(typeof tool.description === 'string' && tool.description.length > 0).toBe(true);
          expect((tool.description as string).length).toBeLessThanOrEqual(original.description.length);
        }
        checked++;
      });
    }
    expect(checked).toBeGreaterThanOrEqual(100);
  });

  it('accepts every recorded and generated valid call with the compact schema', async () => {
    const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
    const refused: string[] = [];
    let validated = 0;
    for (const server of catalog.servers) {
      const compact = (await listed('tools/list', { tools: server.tools }, ['verbosity=compact'])).tools as Entry[];
      const compiled = (tools: Entry[]) => new Map(tools.map((t) => [t.name, ajv.compile(t.inputSchema as object)]));
      const [fullChecks, compactChecks] = [compiled(server.tools), compiled(compact)];
      for (const call of catalog.calls.filter((c) => c.server === server.server)) {
        const full = fullChecks.get(call.tool)!;
        expect(full(call.arguments), `${server.server} ${call.tool} (${call.source}) against the full schema`).toBe(true);
        const check = compactChecks.get(call.tool)!;
        if (!check(call.arguments)) refused.push(`${server.server} ${call.tool} (${call.source}): ${ajv.errorsText(check.errors)}`);
        validated++;
      }
    }
    expect(refused).toEqual([]);
    expect(validated).toBeGreaterThanOrEqual(200);
  });

  it('keeps prompts and resource templates whole but for their prose', async () => {
    let seen = 0;
    for (const server of catalog.servers) {
      for (const [method, key] of [
        ['prompts/list', 'prompts'],
        ['resources/templates/list', 'resourceTemplates'],
      ] as const) {
        const entries = server[key];
        if (!entries) continue;
        const compact = (await listed(method, { [key]: entries }, ['verbosity=compact']))[key] as Entry[];
        expect(compact.map(entryContract)).toEqual(entries.map(entryContract));
        seen += entries.length;
      }
    }
    expect(seen).toBeGreaterThan(0);
  });

  it('cuts the catalog by at least half in o200k tokens, and leaves it alone for a client that declares nothing', async () => {
    const count = await loadTokenizer();
    let full = 0;
    let compact = 0;
    for (const server of catalog.servers) {
      const result = { tools: server.tools };
      expect(await listed('tools/list', result, [])).toBe(result);
      const tokens = countTokensOf(count, 'tools/list', result, await listed('tools/list', result, ['verbosity=compact']))!;
      expect(tokens.out, server.server).toBeLessThanOrEqual(tokens.in);
      full += tokens.in;
      compact += tokens.out;
    }
    expect(full).toBeGreaterThan(25_000);
    expect(compact / full).toBeLessThanOrEqual(0.5);
  });
});
