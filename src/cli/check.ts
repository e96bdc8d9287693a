/**
 * The one check of a config before it is used: `validate` reports what it finds, serving and a
 * reload refuse exactly that. Every problem in one pass: the schema; plugins and rules (checked
 * even when the rest of the file is invalid); then what only a start would show: an upstream
 * command that cannot be split, a tool pins file that cannot be read, and a non-loopback bind
 * without authentication.
 */
import { dirname, resolve } from 'node:path';
import { exposureProblem } from '../fronts/http/auth.js';
import { ConfigError, RuleError } from '../jsonrpc/errors.js';
import { isObject } from '../jsonrpc/message.js';
import type { CompiledRule } from '../rules/compile.js';
import { profileTagWarnings, ruleTagWarnings } from '../rules/tags.js';
import { loadConfig, locateProblems } from '../config/load.js';
import { loadRules, serverRules } from '../config/rules.js';
import type { Config } from '../config/schema.js';
import { negotiationSchema } from '../config/schema-negotiation.js';
import { resolveUpstream } from '../config/upstream.js';
import { PinsFileError, readPins } from '../upstream/tool-pins.js';

export interface CheckedConfig {
  config: Config;
  rules: CompiledRule[];
  /** What is allowed but likely a mistake (a rule waiting for a tag no client sends), located. */
  warnings: string[];
}

/** The config and its compiled rules; throws a ConfigError with every problem when there is any. */
export async function checkConfig(file: string | undefined, overrides: Record<string, unknown>): Promise<CheckedConfig> {
  const problems: string[] = [];
  let config: Config | undefined;
  let negotiation: Config['contentNegotiation'] | undefined;
  try {
    config = loadConfig({ file, overrides });
    negotiation = config.contentNegotiation;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
    // The rest of the file is invalid: its rules and plugins are still checked when their section is.
    negotiation = negotiationSchema.safeParse(err.raw?.contentNegotiation ?? {}).data;
  }
  let rules: CompiledRule[] = [];
  if (negotiation) {
    try {
      rules = await loadRules(negotiation, file, config && serverRules(config));
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (config) {
    config.upstream.toolPins = toolPinsPath(config, file);
    problems.push(...startProblems(config, file, overrides));
  }
  if (problems.length) throw new ConfigError(problems);
  const warnings = [...ruleTagWarnings(config!.contentNegotiation.rules), ...profileTagWarnings(config!.profiles, rules)];
  return { config: config!, rules, warnings: file ? locateProblems(file, warnings) : warnings };
}

/** What serving would refuse of a valid config, each located where its value came from. */
function startProblems(config: Config, file: string | undefined, overrides: Record<string, unknown>): string[] {
  const problems: string[] = [];
  try {
    resolveUpstream(config.upstream, 'demo');
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems.map((p) => locate(p, ['upstream', 'command'], file, overrides)));
  }
  if (config.upstream.toolPins) {
    try {
      readPins(config.upstream.toolPins);
    } catch (err) {
      if (!(err instanceof PinsFileError)) throw err;
      problems.push(locate(`upstream.toolPins: ${err.message}`, ['upstream', 'toolPins'], file, overrides));
    }
  }
  const exposed = exposureProblem(config);
  if (exposed) problems.push(locate(`listen.host: ${exposed}`, ['listen', 'host'], file, overrides));
  return problems;
}

/** upstream.toolPins as a path: relative to the config file's folder (without a file, to the working directory). */
export function toolPinsPath(config: Config, file: string | undefined): string | undefined {
  const pins = config.upstream.toolPins;
  return pins === undefined ? undefined : resolve(file ? dirname(resolve(file)) : process.cwd(), pins);
}

/** `file:line:col: key: …` for a value from the file; for one from a flag or variable, says so instead. */
function locate(problem: string, path: string[], file: string | undefined, overrides: Record<string, unknown>): string {
  let value: unknown = overrides;
  for (const key of path) value = isObject(value) ? value[key] : undefined;
  if (value !== undefined) return problem.replace(`${path.join('.')}:`, `${path.join('.')} (from the command line or environment):`);
  return file ? locateProblems(file, [problem])[0] : problem;
}
