/** Turns the `upstream` config into a concrete stdio or HTTP spec; none given means the demo. */
import type { UpstreamConfig } from '../config/schema.js';
import { splitCommand } from '../config/command.js';
import type { UpstreamSpec } from './types.js';

export function resolveUpstream(config: UpstreamConfig, demoEntry: string): UpstreamSpec {
  if (config.url) return { kind: 'http', url: config.url, headers: config.headers };
  if (config.command) {
    const argv = typeof config.command === 'string' ? splitCommand(config.command) : config.command;
    if (argv.length === 0) throw new Error('upstream.command is empty');
    return { kind: 'stdio', command: argv[0], args: [...argv.slice(1), ...config.args], env: config.env, cwd: config.cwd };
  }
  return { kind: 'stdio', command: process.execPath, args: [demoEntry], env: config.env };
}

/** A one-line description for logs and /healthz, without header values. */
export function describeUpstream(spec: UpstreamSpec): string {
  return spec.kind === 'http' ? spec.url : [spec.command, ...spec.args].join(' ');
}
