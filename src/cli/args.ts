/**
 * Command-line parsing: flags and MCP_PROXY_* variables become config overrides (flags win over
 * the environment, both win over the config file). No side effects here.
 */
import { parseArgs } from 'node:util';
import { UsageError } from '../jsonrpc/errors.js';
import { DEFAULT_PROFILE } from '../config/schema-profiles.js';
import { parseTagList } from '../mcp/features.js';
import { closest } from './suggest.js';

export const HELP = `mcp-negotiate-proxy: a negotiating reverse proxy in front of an existing MCP server

Legacy clients (initialize, protocol up to 2025-11-25) and modern clients (2026-07-28,
stateless) use the same endpoint, in front of a server that speaks either era.

Usage:
  mcp-negotiate-proxy [options]                 serve (HTTP on 127.0.0.1:8080/mcp by default)
  mcp-negotiate-proxy validate --config <file>  check a config file and exit: every problem
                      [options]                 serving would refuse with these options (exit 2)
  mcp-negotiate-proxy schema                    print the config file's JSON Schema
  mcp-negotiate-proxy hash-token [token]        the auth.tokens entry for a token (a new random
                                                one when none is given)
  mcp-negotiate-proxy explain [--config <file>] --features agent,format=json
                      [--method tools/call] [--name get_weather] [--input result.json]
                      [--principal <p>] [--path <path>] [--client-name <name>]
                      [--features-header <tags>]
                                                show which rules match and what they make of a
                                                result (a file, or a built-in sample), offline;
                                                --features: what the client declares; the others:
                                                how it arrives (its profile, its MCP-Features header)
  mcp-negotiate-proxy pins list --config <file>   the tools pinned in upstream.toolPins, and those
                                                whose changed definition is refused
  mcp-negotiate-proxy pins accept <tool>… --config <file>   (or --all)
                                                accept a refused tool's new definition; then
                                                reload the proxy (SIGHUP) to serve it
  mcp-negotiate-proxy pins reject <tool>… --config <file>   (or --all)
                                                keep the pinned definition (the server was put
                                                back) and serve the tool again after a reload

Options:
  --upstream <cmd|url>     the server behind the proxy: a command line that starts a stdio server
                           ("node server.js --flag"), or a Streamable HTTP URL (http://host:port/mcp).
                           Default: the built-in demo server.          env: MCP_PROXY_UPSTREAM
  --upstream <name>=<cmd|url>  one of several servers behind one endpoint (repeatable): its tools
                           and prompts are listed as <name>_<tool>; --env and --upstream-era
                           apply to each. See docs/several-servers.md.
  --upstream-era <era>     auto (default: an HTTP server is asked server/discover, then initialize;
                           a stdio one is legacy until it refuses initialize as a 2026-07-28
                           server does), legacy, modern or dual (both: each client in its own
                           era)                                        env: MCP_PROXY_UPSTREAM_ERA
  --stdio                  be a stdio server (for clients that spawn the proxy) instead of
                           listening on HTTP                           env: MCP_PROXY_STDIO=1
  --features <tags>        feature tags for every client, on the axes its own declaration leaves
                           open (agent,format=json): for hosts that cannot declare them
                           (profiles.default.features)                 env: MCP_PROXY_FEATURES
  --host <addr>            interface to bind (default 127.0.0.1)       env: MCP_PROXY_HOST
                           a non-loopback address needs authentication (auth.tokens or
                           auth.jwt in the config) or --allow-unauthenticated
  --allow-unauthenticated  serve a non-loopback address without authentication (something in
                           front authenticates)                        env: MCP_PROXY_ALLOW_UNAUTHENTICATED=1
  --port <n>               port to listen on (default 8080, 0 = any)   env: MCP_PROXY_PORT
  --config <file>          YAML config file (see config/default.yaml)  env: MCP_PROXY_CONFIG
  --env <NAME[=VALUE]>     set a variable for a stdio upstream (repeatable); NAME alone passes
                           the proxy's own value. Upstreams otherwise get only PATH, HOME, USER,
                           SHELL, TERM and LOGNAME (see upstream.inheritEnv)
  --fail-fast              exit (code 2) when the upstream fails its start-up check, instead of
                           logging the cause and serving               env: MCP_PROXY_FAIL_FAST=1
  --fail-fast-timeout <ms> how long --fail-fast waits for the upstream to answer initialize
                           (default 30000; progress logged every 5 s)  env: MCP_PROXY_FAIL_FAST_TIMEOUT
  --request-timeout <ms>   per-request upstream timeout (default 60000) env: MCP_PROXY_REQUEST_TIMEOUT
  --log-level <level>      fatal|error|warn|info|debug|trace|silent (default info; logs go to stderr)
                                                                       env: MCP_PROXY_LOG_LEVEL
  --log-format <format>    json (default; one object per line) or pretty (for humans)
                                                                       env: MCP_PROXY_LOG_FORMAT
  -h, --help               show this help
  -v, --version            show the version

Environment only:
  MCP_PROXY_SECRET         secret shared by replicas (at least 32 characters): seals session ids
                           and requestState so any replica serves any client; default: random
                           per process, so sessions and retries must reach the process that
                           issued them                                 (replicas.secret)
  MCP_PROXY_PREVIOUS_SECRETS  comma-separated secrets still accepted after a rotation
  MCP_PROXY_REPLICA_ID     this replica's name (default: host name and process id)
  MCP_PROXY_REPLICA_URL    this replica's URL as other replicas reach it (forwarded requests)
  MCP_PROXY_STATE_SECRET   older name of MCP_PROXY_SECRET
  MCP_PROXY_OTLP_ENDPOINT  export OpenTelemetry spans to this OTLP/HTTP traces endpoint (tracing.otlpEndpoint)

Signals:
  SIGTERM, SIGINT          drain (new work gets 503; calls in flight finish), then stop
  SIGHUP                   reload the config file (also when the file is saved)

Examples:
  mcp-negotiate-proxy --upstream "npx -y @modelcontextprotocol/server-everything"
  mcp-negotiate-proxy --upstream http://127.0.0.1:3000/mcp --port 9000
  mcp-negotiate-proxy --stdio --upstream "node my-server.js"
`;

const OPTIONS = {
  upstream: { type: 'string', multiple: true },
  stdio: { type: 'boolean' },
  'allow-unauthenticated': { type: 'boolean' },
  'fail-fast': { type: 'boolean' },
  'fail-fast-timeout': { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  config: { type: 'string' },
  env: { type: 'string', multiple: true },
  'request-timeout': { type: 'string' },
  'upstream-era': { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  features: { type: 'string' },
  'features-header': { type: 'string' },
  principal: { type: 'string' },
  path: { type: 'string' },
  'client-name': { type: 'string' },
  method: { type: 'string' },
  name: { type: 'string' },
  input: { type: 'string' },
  all: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** --fail-fast waits this long for the upstream's answer to initialize: long enough for a slow start, short enough to notice a hang. */
const DEFAULT_FAIL_FAST_TIMEOUT_MS = 30_000;

type Flag = keyof typeof OPTIONS;
/** Serving's options; `validate` takes the same, so that it checks the very start a command line would make. */
const SERVE_FLAGS: Flag[] = [
  'upstream',
  'upstream-era',
  'stdio',
  'features',
  'host',
  'allow-unauthenticated',
  'port',
  'config',
  'env',
  'fail-fast',
  'fail-fast-timeout',
  'request-timeout',
  'log-level',
  'log-format',
  'help',
  'version',
];
/** The options each command takes (help and version take them all). */
const FLAGS_OF: Record<Exclude<CliCommand, 'help' | 'version'>, Flag[]> = {
  serve: SERVE_FLAGS,
  validate: SERVE_FLAGS,
  explain: ['config', 'features', 'method', 'name', 'input', 'principal', 'path', 'client-name', 'features-header', 'help', 'version'],
  schema: ['help', 'version'],
  'hash-token': ['help', 'version'],
  pins: ['config', 'all', 'help', 'version'],
};
const COMMANDS = ['validate', 'schema', 'explain', 'hash-token', 'pins'];
const PINS_ACTIONS = ['list', 'accept', 'reject'] as const;

export type CliCommand = 'serve' | 'validate' | 'schema' | 'explain' | 'hash-token' | 'pins' | 'help' | 'version';

export interface CliRequest {
  command: CliCommand;
  configFile?: string;
  overrides: Record<string, unknown>;
  /** Refuse to start when the upstream's start-up check fails… */
  failFast: boolean;
  /** …or takes longer than this. */
  failFastTimeoutMs: number;
  /** For `hash-token`. */
  token?: string;
  /** For `pins`: what to do, to which tools (`all`: every refused one). */
  pins?: { action: (typeof PINS_ACTIONS)[number]; tools: string[]; all: boolean };
  /** For `explain`: the client's declared tags, the request, and how the client arrives. */
  explain?: {
    features: string[];
    method: string;
    name?: string;
    input?: string;
    arrival: { principal: string; path?: string; clientName?: string; featuresHeader?: string };
  };
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv): CliRequest {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS, tokens: true });
  } catch (err) {
    const unknown = /Unknown option '([^']+)'/.exec((err as Error).message)?.[1];
    const command = guessCommand(argv);
    if (!unknown) throw new UsageError(`${(err as Error).message}\n${optionsOf(command)}`);
    const near = unknown.startsWith('--') ? closest(unknown.slice(2), FLAGS_OF[command]) : undefined;
    throw new UsageError(`unknown option ${unknown}${near ? ` (did you mean --${near}?)` : ''}\n${optionsOf(command)}`);
  }
  const { values, positionals, tokens } = parsed;
  const command = values.help ? 'help' : values.version ? 'version' : positionalCommand(positionals);
  if (command !== 'help' && command !== 'version') refuseForeignOptions(command, tokens);
  const token = command === 'hash-token' ? positionals[1] : undefined;
  const pins = command === 'pins' ? pinsRequest(positionals.slice(1), values.all ?? false) : undefined;

  const pick = (flag: string | undefined, name: string) => flag ?? (env[name] === '' ? undefined : env[name]);
  const upstreams = upstreamFlags(values.upstream ?? (env.MCP_PROXY_UPSTREAM ? [env.MCP_PROXY_UPSTREAM] : []));
  const stdio = values.stdio ?? truthy(env.MCP_PROXY_STDIO);
  const server = { env: values.env && upstreamEnv(values.env, env), era: pick(values['upstream-era'], 'MCP_PROXY_UPSTREAM_ERA') };
  const overrides: Record<string, unknown> = {
    ...(Array.isArray(upstreams) && upstreams.length > 0
      ? { upstreams: upstreams.map((named) => ({ ...named, ...server })) }
      : { upstream: { ...upstreams, ...server } }),
    listen: {
      transport: stdio ? 'stdio' : undefined,
      host: pick(values.host, 'MCP_PROXY_HOST'),
      port: integer(pick(values.port, 'MCP_PROXY_PORT'), '--port'),
    },
    timeouts: { requestMs: integer(pick(values['request-timeout'], 'MCP_PROXY_REQUEST_TIMEOUT'), '--request-timeout') },
    profiles: defaultFeatures(command === 'explain' ? pick(undefined, 'MCP_PROXY_FEATURES') : pick(values.features, 'MCP_PROXY_FEATURES')),
    logLevel: pick(values['log-level'], 'MCP_PROXY_LOG_LEVEL'),
    logFormat: pick(values['log-format'], 'MCP_PROXY_LOG_FORMAT'),
    modern: { stateSecret: pick(undefined, 'MCP_PROXY_STATE_SECRET') },
    auth: { allowUnauthenticated: values['allow-unauthenticated'] ?? truthy(env.MCP_PROXY_ALLOW_UNAUTHENTICATED) },
    tracing: { otlpEndpoint: pick(undefined, 'MCP_PROXY_OTLP_ENDPOINT') },
    replicas: {
      id: pick(undefined, 'MCP_PROXY_REPLICA_ID'),
      secret: pick(undefined, 'MCP_PROXY_SECRET'),
      previousSecrets: pick(undefined, 'MCP_PROXY_PREVIOUS_SECRETS')
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      url: pick(undefined, 'MCP_PROXY_REPLICA_URL'),
    },
  };
  const explain =
    command === 'explain'
      ? {
          features: (values.features ?? '')
            .split(',')
            .map((f) => f.trim())
            .filter(Boolean),
          method: values.method ?? 'tools/call',
          name: values.name,
          input: values.input,
          arrival: {
            principal: values.principal ?? '',
            path: values.path,
            clientName: values['client-name'],
            featuresHeader: values['features-header'],
          },
        }
      : undefined;
  const failFast = values['fail-fast'] ?? truthy(env.MCP_PROXY_FAIL_FAST) ?? false;
  // A flag that would change nothing is a mistake; the variable may sit in an environment shared by both ways of starting.
  if (values['fail-fast-timeout'] !== undefined && !failFast) throw new UsageError('--fail-fast-timeout applies only with --fail-fast');
  const failFastTimeoutMs =
    integer(pick(values['fail-fast-timeout'], 'MCP_PROXY_FAIL_FAST_TIMEOUT'), '--fail-fast-timeout', 1) ?? DEFAULT_FAIL_FAST_TIMEOUT_MS;
  return { command, configFile: pick(values.config, 'MCP_PROXY_CONFIG'), overrides, explain, token, pins, failFast, failFastTimeoutMs };
}

/** `pins list`, `pins accept|reject <tool>…` or `pins accept|reject --all`. */
function pinsRequest(words: string[], all: boolean): CliRequest['pins'] {
  const [action, ...tools] = words;
  const usage = 'Use: pins list, pins accept <tool>… (or --all), pins reject <tool>… (or --all), each with --config <file>';
  if (!PINS_ACTIONS.includes(action as (typeof PINS_ACTIONS)[number]))
    throw new UsageError(`pins: unknown action "${action ?? ''}". ${usage}`);
  if (action === 'list' && (tools.length || all)) throw new UsageError(`pins list takes no tool names. ${usage}`);
  if (action !== 'list' && tools.length > 0 === all)
    throw new UsageError(`pins ${action}: name the tools, or give --all (not both). ${usage}`);
  return { action: action as (typeof PINS_ACTIONS)[number], tools, all };
}

function positionalCommand(positionals: string[]): CliCommand {
  if (positionals.length === 0) return 'serve';
  const [first, ...rest] = positionals;
  if (first === 'hash-token' && rest.length <= 1) return first;
  if (first === 'pins') return first;
  if (rest.length > 0 || !COMMANDS.includes(first)) {
    const near = rest.length === 0 ? closest(first, COMMANDS) : undefined;
    const guess = near ? `the command ${near}` : `--upstream "${positionals.join(' ')}"`;
    throw new UsageError(`Unexpected argument "${positionals.join(' ')}". Did you mean ${guess}?\nRun with --help for the options.`);
  }
  return first as CliCommand;
}

/** The command a command line names, for explaining its mistakes: the first word that is one (unknown options taken as switches). */
function guessCommand(argv: string[]): keyof typeof FLAGS_OF {
  const first = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS, strict: false }).positionals[0];
  return first !== undefined && COMMANDS.includes(first) ? (first as keyof typeof FLAGS_OF) : 'serve';
}

/** An option of another command would be ignored here: a mistake worth saying (`--features` belongs to explain). */
function refuseForeignOptions(command: keyof typeof FLAGS_OF, tokens: Array<{ kind: string; name?: string; rawName?: string }>): void {
  for (const token of tokens) {
    if (token.kind !== 'option' || FLAGS_OF[command].includes(token.name as Flag)) continue;
    const owners = Object.entries(FLAGS_OF)
      .filter(([, flags]) => flags.includes(token.name as Flag))
      .map(([owner]) => (owner === 'serve' ? 'serving' : owner));
    const belongs = owners.length > 1 ? `${owners.slice(0, -1).join(', ')} and ${owners.at(-1)}` : owners[0];
    throw new UsageError(
      `${token.rawName} is not an option of ${command === 'serve' ? 'serving' : command}; it belongs to ${belongs}\n${optionsOf(command)}`,
    );
  }
}

/** The options list printed after a mistake: only the command's own. */
function optionsOf(command: keyof typeof FLAGS_OF): string {
  const flags = FLAGS_OF[command].map((name) => `--${name}`).join(', ');
  return `${command === 'serve' ? 'Options' : `Options of ${command}`}: ${flags}\nRun with --help for what each one does.`;
}

/**
 * `--features` / MCP_PROXY_FEATURES as the default profile's tags; a malformed tag is a usage error (it would
 * be a config error without the flag's name).
 */
function defaultFeatures(value: string | undefined): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  const { tags, ignored } = parseTagList(value);
  if (ignored.length) {
    const problems = ignored.map((i) => `"${i.tag}": ${i.reason}`).join('; ');
    throw new UsageError(`--features (MCP_PROXY_FEATURES): ${problems}. Write tags separated by commas: agent,format=json,!interactive`);
  }
  return { [DEFAULT_PROFILE]: { features: tags } };
}

/** `NAME=` before a server's command line or URL: one of several servers. */
const NAMED_SERVER = /^([A-Za-z][A-Za-z0-9-]{0,31})=(.+)$/s;

function whereTo(spec: string): { url: string } | { command: string } {
  return /^https?:\/\//i.test(spec) ? { url: spec } : { command: spec };
}

/**
 * The --upstream flags: one unnamed server (the `upstream` section), or several named ones (`upstreams`, an array);
 * none: an empty array.
 */
function upstreamFlags(
  flags: string[],
): ({ url: string } | { command: string }) | ({ name: string } & ({ url: string } | { command: string }))[] {
  const named = flags.map((flag) => NAMED_SERVER.exec(flag));
  if (flags.length === 1 && !named[0]) return whereTo(flags[0]);
  const unnamed = flags.filter((_, i) => !named[i]);
  if (unnamed.length > 0)
    throw new UsageError(
      `--upstream ${JSON.stringify(unnamed[0])}: with several servers, name each one: --upstream NAME=SPEC ` +
        '(NAME: a letter, then letters, digits and "-")',
    );
  return named.map((match) => ({ name: match![1], ...whereTo(match![2]) }));
}

/** `--env NAME=VALUE` or `--env NAME` (the proxy's own value, like `docker run -e`). */
function upstreamEnv(entries: string[], env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    const name = eq < 0 ? entry : entry.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`--env needs NAME or NAME=VALUE, got "${entry}"`);
    const value = eq < 0 ? env[name] : entry.slice(eq + 1);
    if (value === undefined) throw new UsageError(`--env ${name}: the proxy has no variable ${name} to pass on; use --env ${name}=VALUE`);
    out[name] = value;
  }
  return out;
}

function integer(value: string | undefined, flag: string, min = 0): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min)
    throw new UsageError(`${flag} must be a whole number${min ? ` of at least ${min}` : ''}, got "${value}"`);
  return Number(value);
}

function truthy(value: string | undefined): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  return ['1', 'true', 'yes', 'on'].includes(value.toLowerCase());
}
