/** Turns the `upstream` config into a concrete stdio or HTTP spec; none given means the demo. */
import type { UpstreamConfig } from './schema.js';
import { splitCommand } from './command.js';
import { ConfigError } from '../jsonrpc/errors.js';
import { isSecretName, maskSecrets } from '../ops/mask.js';
import type { UpstreamSpec } from '../upstream/types.js';

/** How one server is started or reached. */
export type ServerSettings = Pick<UpstreamConfig, 'url' | 'command' | 'args' | 'env' | 'inheritEnv' | 'cwd' | 'headers' | 'maxJsonDepth'>;

/**
 * Throws a ConfigError for a command line that cannot be split into a program and its arguments (`at`: where
 * the config says it).
 */
export function resolveUpstream(config: ServerSettings, demoEntry: string, at = 'upstream'): UpstreamSpec {
  const { maxJsonDepth } = config;
  if (config.url) return { kind: 'http', url: config.url, headers: config.headers, maxJsonDepth };
  if (config.command) {
    const argv = typeof config.command === 'string' ? commandArgv(config.command, at) : config.command;
    if (argv.length === 0) throw new ConfigError([`${at}.command: names no program (it is only whitespace)`]);
    return {
      kind: 'stdio',
      command: argv[0],
      args: [...argv.slice(1), ...config.args],
      env: config.env,
      inheritEnv: config.inheritEnv,
      cwd: config.cwd,
      maxJsonDepth,
    };
  }
  return { kind: 'stdio', command: process.execPath, args: [demoEntry], env: config.env, maxJsonDepth };
}

function commandArgv(line: string, at: string): string[] {
  try {
    return splitCommand(line);
  } catch (err) {
    throw new ConfigError([`${at}.command: ${(err as Error).message}`]);
  }
}

/** A one-line description for logs and /healthz, with secret-looking values masked. */
export function describeUpstream(spec: UpstreamSpec): string {
  if (spec.kind === 'http') return redactUrl(spec.url);
  return maskSecrets([spec.command, ...spec.args].join(' '));
}

function redactUrl(raw: string): string {
  const url = new URL(raw);
  if (url.username || url.password) {
    url.username = '***';
    url.password = '';
  }
  for (const name of [...url.searchParams.keys()]) if (isSecretName(name)) url.searchParams.set(name, '***');
  return url.toString().replaceAll('%2A%2A%2A', '***');
}
