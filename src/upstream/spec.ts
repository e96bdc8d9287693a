/** Turns the `upstream` config into a concrete stdio or HTTP spec; none given means the demo. */
import type { UpstreamConfig } from '../config/schema.js';
import { splitCommand } from '../config/command.js';
import { isSecretName } from '../ops/mask.js';
import type { UpstreamSpec } from './types.js';

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
  const words = [spec.command, ...spec.args].map((word, i, all) => {
    const eq = word.indexOf('=');
    if (eq > 0 && isSecretName(word.slice(0, eq))) return `${word.slice(0, eq)}=***`;
    const previous = all[i - 1];
    if (previous?.startsWith('-') && !previous.includes('=') && isSecretName(previous)) return '***';
    return word;
  });
  return words.join(' ');
}

function redactUrl(raw: string): string {
  const url = new URL(raw);
  if (url.password) url.password = '***';
  for (const name of [...url.searchParams.keys()]) if (isSecretName(name)) url.searchParams.set(name, '***');
  return url.toString().replaceAll('%2A%2A%2A', '***');
}
