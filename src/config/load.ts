/**
 * Config loading: YAML file → ${ENV} interpolation → overrides (env, CLI) → zod validation.
 * Every problem is reported with the file, line, column and key path, all at once.
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, isMap, isSeq, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../jsonrpc/errors.js';
import { isObject } from '../jsonrpc/message.js';
import { configSchema, type Config } from './schema.js';

export interface LoadOptions {
  /** Path of a YAML config file, if any. */
  file?: string;
  /** Values that win over the file (from the environment and the command line), as nested objects. */
  overrides?: Record<string, unknown>;
  /** Environment for ${VAR} interpolation. */
  env?: NodeJS.ProcessEnv;
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  let raw: Record<string, unknown> = {};
  let locate: (path: PropertyKey[]) => string = (path) => keyPath(path);
  if (opts.file) {
    const file = opts.file;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError([`${file}: cannot read the config file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
    }
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines });
    if (doc.errors.length > 0) {
      throw new ConfigError(
        doc.errors.map((e) => {
          const at = e.linePos?.[0];
          return `${file}${at ? `:${at.line}:${at.col}` : ''}: YAML syntax error: ${e.message.split('\n')[0]}`;
        }),
      );
    }
    let value: Record<string, unknown>;
    try {
      value = doc.toJS() ?? {}; // an unknown alias, or aliases expanding too far, fail here
    } catch (err) {
      throw new ConfigError([`${file}: YAML error: ${(err as Error).message.split('\n')[0]}`]);
    }
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw new ConfigError([`${file}:1:1: the config file must be a YAML mapping (key: value pairs)`]);
    }
    const missing: string[] = [];
    raw = interpolateEntries(dropNulls(value), env, [], (path, name) =>
      missing.push(
        `${file}${lineOf(doc, lines, path)}: ${keyPath(path)}: ` +
          `environment variable ${name} is not set (use \${${name}:-default} for a fallback)`,
      ),
    );
    if (missing.length) throw new ConfigError(missing);
    locate = (path) => `${file}${lineOf(doc, lines, path)}: ${keyPath(path)}`;
  }
  const merged = deepMerge(raw, opts.overrides ?? {});
  const result = configSchema.safeParse(merged);
  if (!result.success)
    throw new ConfigError(
      result.error.issues.map((i) => `${locate(i.path)}: ${describeIssue(i)}`),
      merged,
    );
  return result.data;
}

/**
 * Puts `file:line:col` in front of problems that start with a key path (`contentNegotiation.rules[0].apply[1]: …`),
 * for problems found after loading (rules, plugins).
 */
export function locateProblems(file: string, problems: string[]): string[] {
  let doc: Document;
  const lines = new LineCounter();
  try {
    doc = parseDocument(readFileSync(file, 'utf8'), { lineCounter: lines });
  } catch {
    return problems;
  }
  return problems.map((problem) => {
    const colon = problem.indexOf(': ');
    const dotted = colon > 0 ? problem.slice(0, colon) : '';
    if (!/^[A-Za-z][A-Za-z0-9_.[\]]*$/.test(dotted)) return `${file}: ${problem}`;
    const path = dotted
      .split(/[.[\]]/)
      .filter(Boolean)
      .map((k) => (/^\d+$/.test(k) ? Number(k) : k));
    return `${file}${lineOf(doc, lines, path)}: ${problem}`;
  });
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  return issue.message;
}

function keyPath(path: PropertyKey[]): string {
  return path.length ? path.map(String).join('.') : '(top level)';
}

/** ":line:col" of the deepest node on `path` that exists in the document. */
function lineOf(doc: Document, lines: LineCounter, path: PropertyKey[]): string {
  let node: unknown = doc.contents;
  let found = node as Node | undefined;
  for (const key of path) {
    if (!isMap(node) && !isSeq(node)) break;
    const next = (node as { get(k: unknown, keepScalar: boolean): unknown }).get(key, true);
    if (next === undefined) break;
    node = next;
    found = next as Node;
  }
  const offset = found?.range?.[0];
  if (offset === undefined) return '';
  const { line, col } = lines.linePos(offset);
  return `:${line}:${col}`;
}

/** A fallback stops at the next `$`, so an unclosed `${A:-` cannot make the scan quadratic. */
const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}$]*))?\}/g;

/** Replaces ${VAR} and ${VAR:-default} in every string value; reports unset variables. */
function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  path: PropertyKey[],
  missing: (path: PropertyKey[], name: string) => void,
): unknown {
  if (typeof value === 'string') {
    return value.replace(VAR, (_, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      missing(path, name);
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, [...path, i], missing));
  if (isObject(value)) return interpolateEntries(value, env, path, missing);
  return value;
}

function interpolateEntries(
  value: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  path: PropertyKey[],
  missing: (path: PropertyKey[], name: string) => void,
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, [...path, k], missing)]));
}

/** A key written with no value (`upstream:` followed by comments only) means "the defaults". */
function dropNulls(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, isObject(v) ? dropNulls(v) : v]),
  );
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] = isObject(b) && isObject(v) ? deepMerge(b, v) : v;
  }
  return out;
}
