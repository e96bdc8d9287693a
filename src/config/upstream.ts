/** Turns the `upstream` config into a concrete stdio or HTTP spec; none given means the demo. */
import type { UpstreamConfig } from './schema.js';
import { splitCommand } from './command.js';
import { isSecretName, maskSecrets } from '../ops/mask.js';
import type { UpstreamSpec } from '../upstream/types.js';

export function resolveUpstream(config: UpstreamConfig, demoEntry: string): UpstreamSpec {
  if (config.url) return { kind: 'http', url: config.url, headers: config.headers };
  if (config.command) {
    const argv = typeof config.command === 'string' ? splitCommand(config.command) : config.command;
    if (argv.length === 0) throw new Error('upstream.command is empty');
    return { kind: 'stdio', command: argv[0], args: [...argv.slice(1), ...config.args], env: config.env, inheritEnv: config.inheritEnv, cwd: config.cwd };
  }
  return { kind: 'stdio', command: process.execPath, args: [demoEntry], env: config.env };
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
