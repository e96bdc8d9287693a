#!/usr/bin/env node
/**
 * The CLI entry point and the only file that touches process.*: arguments, config, logger,
 * signals, exit codes (0 done, 1 runtime failure, 2 bad usage or config).
 */
import { randomBytes } from 'node:crypto';
import { PROXY_VERSION } from './ops/version.js';
import pino from 'pino';
import { HELP, parseCli } from './cli/args.js';
import { loadConfig } from './config/load.js';
import { configJsonSchema } from './config/schema.js';
import { checkConfig } from './cli/check.js';
import { explain } from './cli/explain.js';
import { pinsCommand } from './cli/pins.js';
import { Profiles } from './core/profiles.js';
import { hashToken } from './fronts/http/auth.js';
import { watchConfigFile } from './config/reload.js';
import { createGateway } from './gateway.js';
import { logDestination } from './ops/log-destination.js';
import { Tracing } from './ops/tracing.js';
import { boundedFields, clip } from './ops/log-text.js';
import { loadRules, serverRules } from './config/rules.js';
import { ConfigError, RuleError, UserError } from './jsonrpc/errors.js';

async function main(): Promise<number> {
  const request = parseCli(process.argv.slice(2), process.env);
  if (request.command === 'help') return print(HELP);
  if (request.command === 'version') return print(PROXY_VERSION);
  if (request.command === 'schema') return print(JSON.stringify(configJsonSchema(), null, 2));
  if (request.command === 'hash-token') return print(tokenAndHash(request.token));
  if (request.command === 'pins') return print(pinsCommand(request.pins!, request.configFile, request.overrides));

  if (request.command === 'explain') {
    const config = loadConfig({ file: request.configFile, overrides: request.overrides });
    const rules = await loadRules(config.contentNegotiation, request.configFile, serverRules(config));
    return print(await explain(rules, request.explain!, new Profiles(config.profiles)));
  }
  // `validate` reports every problem of the config (schema, plugins, rules, what a start would refuse); serving refuses exactly those.
  const { config, rules, warnings } = await checkConfig(request.configFile, request.overrides);
  if (request.command === 'validate') {
    for (const warning of warnings) process.stderr.write(`mcp-negotiate-proxy: warning: ${warning}\n`);
    const warned = warnings.length ? `, ${warnings.length} warning(s)` : '';
    return print(`${request.configFile ?? '(defaults)'}: OK (${rules.length} content-negotiation rules${warned})`);
  }

  const lines = config.logFormat === 'pretty' ? undefined : logDestination(process.stderr);
  if (lines) process.on('exit', () => lines.drain());
  const log = pino(
    {
      name: 'mcp-negotiate-proxy',
      level: config.logLevel,
      redact: {
        paths: [
          'headers.authorization',
          '*.headers.authorization',
          'headers.cookie',
          `headers["${config.auth.apiKeyHeader.toLowerCase()}"]`,
        ],
        censor: '[redacted]',
      },
      // No field or message grows with what a client or an upstream sends.
      formatters: { log: boundedFields, bindings: boundedFields },
      hooks: {
        logMethod(args, method) {
          return method.apply(this, args.map((a) => (typeof a === 'string' ? clip(a) : a)) as Parameters<typeof method>);
        },
      },
    },
    lines ?? (await prettyLines()),
  );
  // A last line of defence: one request's failure that escaped its own handling must not end every session.
  process.on('unhandledRejection', (err) =>
    log.error({ err: (err as Error)?.stack ?? String(err) }, 'internal error: a failure nobody handled; the proxy goes on'),
  );
  const gateway = createGateway(config, {
    log,
    rules,
    failFast: request.failFast ? { timeoutMs: request.failFastTimeoutMs } : undefined,
    tracing: await Tracing.create(config.tracing, PROXY_VERSION),
  });
  process.on('exit', () => gateway.killChildrenNow());
  for (const warning of warnings) log.warn(warning);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal; killing upstreams now');
      gateway.killChildrenNow();
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    gateway.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // SIGHUP and saving the config file reload it; a config that does not validate changes nothing.
  const reload = async (why: string) => {
    try {
      const { config: next, rules: nextRules, warnings: nextWarnings } = await checkConfig(request.configFile, request.overrides);
      const { live, restart } = gateway.reload(next, nextRules);
      for (const warning of nextWarnings) log.warn(warning);
      log.info(
        { why, applied: live, rules: nextRules.length },
        live.length
          ? 'config reloaded: new sessions and modern requests use it; open legacy sessions keep what they negotiated'
          : 'config reloaded: nothing that applies live changed',
      );
      if (restart.length) log.warn({ sections: restart }, 'config changes that take effect only after a restart');
    } catch (err) {
      const problems = err instanceof UserError ? err.problems : [(err as Error).message];
      log.error({ why, problems }, 'config reload refused; the running config stays');
    }
  };
  process.on('SIGHUP', () => void reload('SIGHUP'));
  if (request.configFile && config.listen.transport === 'http') watchConfigFile(request.configFile, () => void reload('file changed'));

  await gateway.start().catch(async (err: unknown) => {
    await gateway.close();
    throw err;
  });
  const reason = await gateway.done;
  if (stopping) return new Promise<number>(() => undefined); // stop() exits
  await gateway.close();
  if (reason && reason.code !== 'CLIENT_GONE') {
    log.error({ reason: reason.message }, 'session ended');
    return 1;
  }
  return 0;
}

/** For `hash-token`: the config entry for a given token, or for a new random one. */
function tokenAndHash(given: string | undefined): string {
  const token = given ?? randomBytes(32).toString('base64url');
  const entry = `auth:\n  tokens:\n    - name: client-1          # who holds it\n      sha256: ${hashToken(token)}`;
  return given ? entry : `token (give it to the client; it is not stored anywhere): ${token}\n\n${entry}`;
}

function print(text: string): number {
  process.stdout.write(text.endsWith('\n') ? text : text + '\n');
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    if (err instanceof UserError) {
      const problems = err instanceof ConfigError || err instanceof RuleError ? err.problems : undefined;
      process.stderr.write(`mcp-negotiate-proxy: ${problems ? 'invalid configuration\n  ' + problems.join('\n  ') : err.message}\n`);
      process.exitCode = 2;
      return;
    }
    const e = err as NodeJS.ErrnoException;
    const hint =
      e.code === 'EADDRINUSE'
        ? ' (another process uses this port: pick one with --port)'
        : e.code === 'EACCES'
          ? ' (not permitted: use a port above 1023)'
          : '';
    process.stderr.write(`mcp-negotiate-proxy: ${e.code ? `${e.message}${hint}` : (e.stack ?? String(err))}\n`);
    process.exitCode = 1;
  },
);

/** Log lines for people (`logFormat: pretty`); pino-pretty is loaded only then. */
async function prettyLines() {
  const { default: pretty } = await import('pino-pretty');
  return pretty({ destination: 2, colorize: process.stderr.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name' });
}
