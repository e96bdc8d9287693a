/**
 * Builds the rule set at start-up: plugins imported and checked, user rules and (unless turned
 * off) the built-in rules compiled. Every problem stops start-up with the config path.
 */
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_RULES } from '../rules/defaults.js';
import { builtinTransformers } from '../transformers/index.js';
import { RuleError } from '../jsonrpc/errors.js';
import { compileRules, type CompiledRule, type RuleConfig } from '../rules/compile.js';
import type { Transformer } from '../transformers/contract.js';
import { locateProblems } from './load.js';
import { SERVER_RULE_METHODS, type ServerConfig } from './schema-upstreams.js';

/** The `contentNegotiation` section of the config, as far as rules are concerned. */
export interface RuleSetConfig {
  enabled: boolean;
  useDefaultRules: boolean;
  rules: RuleConfig[];
  plugins: string[];
}

/** Rules as one part of the config has them: `path` is where (`upstreams[1].rules`), for the problems they have. */
export interface RuleGroup {
  path: string;
  rules: RuleConfig[];
}

/** What several servers behind one endpoint add to the rules: each one's own, and the prefixes of their names. */
export interface ServerRuleSets {
  /** Each server's own rules, for the names clients see, with where the config has them. */
  groups: RuleGroup[];
  /** What the names of the prefixed servers' tools and prompts start with (`files_`). */
  prefixes: string[];
}

/**
 * Each server's own rules (`upstreams[].rules`), for the names clients see: a rule's name globs get the server's
 * prefix, and a rule without one matches every tool and prompt of the server.
 */
export function serverRules(config: { upstreams?: ServerConfig[]; upstream: { nameSeparator: string } }): ServerRuleSets {
  const servers = config.upstreams ?? [];
  const groups = servers.map((server, i) => {
    const prefix = server.prefix ?? server.name;
    const outer = (glob: string) => (prefix === '' ? glob : `${prefix}${config.upstream.nameSeparator}${glob}`);
    const rules = server.rules.map((rule) => {
      const globs = rule.when.name === undefined ? ['*'] : Array.isArray(rule.when.name) ? rule.when.name : [rule.when.name];
      const method = rule.when.method ?? [...SERVER_RULE_METHODS];
      return { ...rule, name: rule.name ?? `${server.name} rule`, when: { ...rule.when, method, name: globs.map(outer) } };
    });
    return { path: `upstreams[${i}].rules`, rules };
  });
  const prefixes = servers.flatMap((s) => ((s.prefix ?? s.name) === '' ? [] : [`${s.prefix ?? s.name}${config.upstream.nameSeparator}`]));
  return { groups, prefixes };
}

/**
 * The built-in rules, where they name tools (the exact contents of server-filesystem's and others'), naming them
 * under every prefix too: a file read through `files_read_text_file` stays as exact as through `read_text_file`.
 */
function builtInRules(prefixes: string[]): RuleConfig[] {
  if (prefixes.length === 0) return DEFAULT_RULES;
  return DEFAULT_RULES.map((rule) => {
    if (rule.when.name === undefined) return rule;
    const globs = Array.isArray(rule.when.name) ? rule.when.name : [rule.when.name];
    return { ...rule, when: { ...rule.when, name: [...globs, ...prefixes.flatMap((p) => globs.map((g) => p + g))] } };
  });
}

/** `servers`: what several servers add (their own rules come before the section's, each compiled where the config has it). */
export async function loadRules(
  config: RuleSetConfig,
  configFile?: string,
  servers: ServerRuleSets = { groups: [], prefixes: [] },
): Promise<CompiledRule[]> {
  if (!config.enabled) return [];
  const transformers = builtinTransformers();
  const base = configFile ? dirname(resolve(configFile)) : process.cwd();
  // Every problem is reported at once: plugins that fail to load, then the rules.
  const problems: string[] = [];
  for (const [i, path] of config.plugins.entries()) {
    try {
      for (const t of await importPlugin(resolve(base, path), `contentNegotiation.plugins[${i}]`)) {
        if (transformers.has(t.name))
          throw new RuleError([`contentNegotiation.plugins[${i}]: ${path}: transformer "${t.name}" is already defined`]);
        transformers.set(t.name, t);
      }
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      problems.push(...err.problems);
    }
  }
  const section = {
    path: 'contentNegotiation.rules',
    rules: [...config.rules, ...(config.useDefaultRules ? builtInRules(servers.prefixes) : [])],
  };
  const rules: CompiledRule[] = [];
  for (const group of [...servers.groups, section]) {
    try {
      rules.push(...compileRules(group.rules, transformers, group.path));
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length === 0) return rules;
  throw new RuleError(configFile ? locateProblems(configFile, problems) : problems);
}

async function importPlugin(file: string, at: string): Promise<Transformer[]> {
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(file).href);
  } catch (err) {
    throw new RuleError([`${at}: cannot load plugin ${file}: ${(err as Error).message.split('\n')[0]}`]);
  }
  const found = Object.values(mod).filter(isTransformer);
  if (found.length === 0) {
    throw new RuleError([`${at}: ${file} exports no transformer (an object with name, description, options (a zod schema) and create())`]);
  }
  return found;
}

function isTransformer(value: unknown): value is Transformer {
  const t = value as Transformer | null;
  return (
    typeof t === 'object' &&
    t !== null &&
    typeof t.name === 'string' &&
    /^[a-z][a-z0-9-]*$/.test(t.name) &&
    typeof t.create === 'function' &&
    typeof (t.options as { safeParse?: unknown })?.safeParse === 'function'
  );
}
