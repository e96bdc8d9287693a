/**
 * The documentation runs: every fenced code block in README.md and docs/*.md is run or checked,
 * every relative link resolves, and the reference covers every config key and error code.
 *
 * What happens to a block, by its language:
 * - yaml: a proxy config (or a fragment of one, see `fragment=`) is written to a temp file and
 *   checked with the proxy's own `node dist/main.js validate --config <file>`: exit 0 and `OK`,
 *   or exit 2 with `invalid`. Relative paths in it resolve as from the repository root. Every
 *   `${VAR}` it uses without a fallback is set to a 40-character placeholder unless `env=` sets
 *   it. Other YAML (Compose, Kubernetes) must say `parse-only`; it is parsed.
 * - sh, bash, shell: cut into command lines (a newline outside quotes ends one; `\` continues
 *   it), then run with bash from the repository root, in order, with `set -eo pipefail`:
 *   - `mcp-negotiate-proxy …` runs `node dist/main.js …` (a wrapper on PATH); `node
 *     dist/main.js …` and `npm start -- …` run as written;
 *     `npx -y @modelcontextprotocol/server-everything` finds the local devDependency
 *     (npm_config_offline=true: nothing is downloaded).
 *   - A proxy command that serves (no `validate`, `schema`, `explain`, `hash-token`, `--help`,
 *     `--version`) in a block expected to exit 0 runs on its own, on a free port (`--port N`
 *     becomes `--port 0`, and MCP_PROXY_PORT=0 is set): it must log
 *     its URL and answer /healthz 200, and /readyz 200 unless its upstream is an HTTP server
 *     (nothing listens at the docs' example URLs; with several named servers, /readyz must be
 *     503 naming exactly the HTTP ones, and /healthz show the others up); then SIGTERM must stop
 *     it (exit 0).
 *     `--stdio` instead gets an `initialize` line and must answer it, then exit 0 when stdin closes.
 *   - `curl` runs with `--fail-with-body` (an HTTP error status fails the block) against one
 *     proxy this test starts in front of the demo server with config/examples/variants.yaml:
 *     `127.0.0.1:8080` in a block becomes that proxy's address. Traffic goes to 127.0.0.1 only.
 *   - `npm ci`, `npm install`, `npm test` and `npm run <script>` are not run: they would replace
 *     the node_modules other worktrees share, rebuild dist/ under running tests, or run the whole
 *     suite. The test checks that package-lock.json and the scripts exist instead.
 *   - `docker`, `docker-compose`, `kubectl` and `helm` cannot run here: a block holding them
 *     must be marked `covered-by=` (below), or it fails.
 *   The block must exit 0 (or as `exit=` says). `validate` must print OK, `--version` the version.
 * - ts, typescript: run with tsx against the same shared proxy; exit 0.
 * - python: run with the test environment's Python (.venv, test/python/setup.sh) against the
 *   same shared proxy; exit 0.
 * - json: parsed. With `output`, it must also be contained in a JSON document that the block
 *   before it printed (objects may leave keys out; arrays keep their length). With `host-config`,
 *   it is an MCP host's config file (`mcpServers`, or VS Code's `servers`): the official v1 SDK
 *   client, standing in for the host, connects to each server in it as the host would (a `url`
 *   with its `headers`, `127.0.0.1:8080` being the shared proxy; or the `command` and `args`
 *   spawned, `npx` offline), and where the config gives feature tags (MCP-Features, --features)
 *   negotiation must be in effect: `get_weather`, when listed, answers with structuredContent.
 * - text: needs `output` (every non-blank line must appear in the output of the block before it;
 *   `…` in a line matches anything) or `illustration` (a diagram: not checked).
 * Any other language fails: label every fence.
 *
 * Markers: an HTML comment right before the fence (blank lines allowed between), invisible on
 * GitHub: `<!-- doc-test: directive; directive=value; … -->`, directives separated by `;`:
 *   fragment=<dot.path>   yaml: the block is placed at this path of an empty config
 *                         (e.g. `fragment=contentNegotiation.rules` for a list of rules)
 *   invalid               yaml: the config must fail validation (exit 2)
 *   file=<name>           yaml: validate it under this file name (shows in the messages)
 *   parse-only            yaml: not a proxy config; parsed only
 *   env=A=1,B=2           environment for validate or the commands
 *   exit=<n>              sh/ts: expected exit code (default 0)
 *   expect=<text>         sh/ts: the output must contain this text (repeatable)
 *   covered-by=<file>; mentions=<a>,<b>
 *                         sh: not run here; <file> (the test that covers the commands) must
 *                         exist and contain every mention, and each mention must appear in the
 *                         block or be a file of the repository the commands use
 *   output                json/text: the output of the block before it
 *   illustration          text: not checked
 *   host-config           json: an MCP host's config, connected to and used (above)
 *
 * Links: every relative link in README.md and docs/*.md must name an existing file or folder,
 * and an anchor (`#…`) an existing heading of that Markdown file. Every docs/*.md is linked from
 * README.md. The reference must name every config key (docs/configuration.md) and every
 * error code of src/jsonrpc/errors.ts (docs/error-codes.md). The README's first screen names
 * the commands that run the proxy and the tests, and the tests' duration docs/testing.md gives.
 *
 * Nothing a block runs may leave files in the repository (git status is compared).
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse as parseYaml, parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  containsJson,
  extractBlocks,
  headingAnchors,
  jsonDocuments,
  programWords,
  relativeLinks,
  shellCommands,
  simpleCommands,
  unquote,
  type DocBlock,
} from '../helpers/doc-blocks.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PROXY_MAIN, PYTHON, ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';

const DOCS = [
  'README.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const TEXT = new Map(DOCS.map((f) => [f, readFileSync(`${ROOT}${f}`, 'utf8')]));
const PKG = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string; scripts: Record<string, string> };
const PLACEHOLDER = 'doc-test-placeholder-0123456789abcdef0123';
const ELSEWHERE = new Set(['docker', 'docker-compose', 'kubectl', 'helm']);
const SUBCOMMANDS = new Set(['validate', 'schema', 'explain', 'hash-token']);

/** A block with the `output` blocks that follow it (they check what it printed). */
interface Unit {
  block: DocBlock;
  outputs: DocBlock[];
}

function units(): Unit[] {
  const all: Unit[] = [];
  for (const [file, text] of TEXT) {
    for (const block of extractBlocks(file, text)) {
      if (block.directives.output) {
        const prev = all.at(-1);
        if (!prev || prev.block.file !== file) throw new Error(`${file}:${block.line}: an output block needs a block before it`);
        prev.outputs.push(block);
      } else all.push({ block, outputs: [] });
    }
  }
  return all;
}
const UNITS = units();
const name = (b: DocBlock) => `${b.file}:${b.line} (${b.lang})`;

let work: string; // temp folder: the PATH wrapper, YAML files, TypeScript snippets
let bin: string;
let shared: Running; // the proxy the curl and TypeScript examples talk to
let sharedHost: string;
let gitStatus: string;
const groups = new Set<number>(); // process groups of serve commands, killed at the end

const status = () => execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: ROOT, encoding: 'utf8' });

/** A temp folder whose `config` and `examples` point at the repository's: relative paths resolve as from the root. */
function rootLike(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const entry of ['config', 'examples', 'node_modules']) symlinkSync(`${ROOT}${entry}`, join(dir, entry));
  return dir;
}

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(
  cmd: string,
  args: string[],
  o: { cwd?: string; env?: Record<string, string>; input?: string; timeoutMs?: number } = {},
): Promise<Ran> {
  return new Promise((resolveRun, reject) => {
    const proc = spawn(cmd, args, {
      cwd: o.cwd ?? ROOT,
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        npm_config_update_notifier: 'false',
        npm_config_offline: 'true',
        ...o.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    // A command that exits without reading its input closes the pipe (EPIPE): its exit code says how it went.
    proc.stdin.on('error', () => undefined);
    proc.stdin.end(o.input ?? '');
    const timer = setTimeout(() => {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
      reject(new Error(`timed out after ${o.timeoutMs ?? 30_000} ms: ${cmd} ${args.join(' ')}\n${stdout}\n${stderr}`));
    }, o.timeoutMs ?? 30_000);
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      resolveRun({ code, signal, stdout, stderr });
    });
  });
}

/** Checks the `output` blocks after a block against what it printed. */
function checkOutputs(unit: Unit, printed: string): void {
  for (const out of unit.outputs) {
    if (out.lang === 'json') {
      const wanted = JSON.parse(out.code);
      const docs = jsonDocuments(printed);
      expect(
        docs.some((d) => containsJson(d, wanted)),
        `${name(out)}: no JSON the block printed contains it. Printed:\n${printed.slice(0, 4000)}`,
      ).toBe(true);
    } else if (out.lang === 'text') {
      const lines = printed.split('\n').map((l) => l.trim());
      for (const want of out.code
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)) {
        const re = new RegExp(
          `^${want
            .split('…')
            .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
            .join('.*')}$`,
        );
        expect(
          lines.some((l) => re.test(l)),
          `${name(out)}: "${want}" is not in the output:\n${printed}`,
        ).toBe(true);
      }
    } else throw new Error(`${name(out)}: an output block must be json or text`);
  }
}

// ---- YAML ------------------------------------------------------------------------------

async function checkYaml(unit: Unit, index: number): Promise<void> {
  const { block } = unit;
  const d = block.directives;
  if (d.parseOnly) {
    const docs = parseAllDocuments(block.code);
    for (const doc of docs) expect(doc.errors, name(block)).toEqual([]);
    expect(docs.length, name(block)).toBeGreaterThan(0);
    return;
  }
  let text = block.code;
  if (d.fragment) {
    const wrapped = d.fragment.split('.').reduceRight<unknown>((inner, key) => ({ [key]: inner }), parseYaml(block.code));
    text = stringifyYaml(wrapped);
  }
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) env[m[1]] = PLACEHOLDER;
  Object.assign(env, d.env);
  const dir = rootLike(join(work, `yaml-${index}`));
  const file = d.file ?? 'config.yaml';
  writeFileSync(join(dir, file), text);
  const r = await run(process.execPath, [PROXY_MAIN, 'validate', '--config', file], { cwd: dir, env });
  const printed = r.stdout + r.stderr;
  if (d.invalid) {
    expect(r.code, `${name(block)} should not validate:\n${printed}`).toBe(2);
  } else {
    expect(r.code, `${name(block)} does not validate:\n${printed}`).toBe(0);
    expect(r.stdout).toContain(`${file}: OK`);
  }
  checkOutputs(unit, printed);
}

// ---- shell -----------------------------------------------------------------------------

type Kind = 'run' | 'serve' | 'npm' | 'elsewhere';

/** The proxy's arguments when a simple command runs the proxy CLI, else undefined. */
function proxyArgs(words: string[]): string[] | undefined {
  const w = programWords(words).map(unquote);
  if (w[0] === 'mcp-negotiate-proxy') return w.slice(1);
  if (w[0] === 'npx') {
    const i = w.findIndex((x, j) => j > 0 && !x.startsWith('-'));
    return w[i] === 'mcp-negotiate-proxy' ? w.slice(i + 1) : undefined;
  }
  if (w[0] === 'node' && w[1] === 'dist/main.js') return w.slice(2);
  if (w[0] === 'npm' && w[1] === 'start') return w[2] === '--' ? w.slice(3) : w.slice(2);
  return undefined;
}

function kindOf(command: string): Kind {
  const parts = simpleCommands(command);
  const programs = parts.map((p) => programWords(p).map(unquote));
  if (programs.some((p) => ELSEWHERE.has(p[0]))) return 'elsewhere';
  const isNpmBuild = (p: string[]) => p[0] === 'npm' && ['ci', 'install', 'i', 'test', 'run'].includes(p[1]);
  if (programs.some(isNpmBuild)) {
    if (!programs.every(isNpmBuild)) throw new Error(`mix npm ci/install/test/run with other commands on separate lines: ${command}`);
    return 'npm';
  }
  if (parts.length === 1) {
    const args = proxyArgs(parts[0]);
    if (args && !SUBCOMMANDS.has(args[0]) && !args.some((a) => ['-h', '--help', '-v', '--version'].includes(a))) return 'serve';
  }
  return 'run';
}

function checkNpm(command: string): void {
  for (const p of simpleCommands(command).map((words) => programWords(words).map(unquote))) {
    if (p[1] === 'ci' || p[1] === 'install' || p[1] === 'i') expect(existsSync(`${ROOT}package-lock.json`), command).toBe(true);
    else if (p[1] === 'test') expect(PKG.scripts.test, command).toBeTruthy();
    else expect(PKG.scripts[p[2]], `${command}: no script "${p[2]}" in package.json`).toBeTruthy();
  }
}

/** The servers a proxy command names (`--upstream NAME=SPEC`), and whether each is reached over HTTP. */
function namedServers(args: string[]): { name: string; http: boolean }[] {
  const specs = args.flatMap((a, i) => (a === '--upstream' ? [args[i + 1] ?? ''] : a.startsWith('--upstream=') ? [a.slice(11)] : []));
  return specs.flatMap((spec) => {
    const m = /^([A-Za-z][A-Za-z0-9-]{0,31})=(.+)$/s.exec(spec);
    return m ? [{ name: m[1], http: /^["']?https?:\/\//i.test(m[2]) }] : [];
  });
}

/**
 * Several named servers, some over HTTP: nothing listens at the docs' example URLs, so /readyz must
 * stay 503 naming exactly those (required, as every server named on the command line is), and
 * /healthz must show every other server up.
 */
async function checkSeveral(
  base: string,
  servers: { name: string; http: boolean }[],
  until: (check: () => Promise<boolean>, what: string, ms: number) => Promise<void>,
): Promise<void> {
  const down = servers.filter((s) => s.http).map((s) => s.name);
  const mentions = (cause: string, name: string) => cause.toLowerCase().includes(`server "${name.toLowerCase()}"`);
  await until(
    async () => {
      const ready = await fetch(`${base}/readyz`);
      const { cause = '' } = (await ready.json()) as { cause?: string };
      const health = (await (await fetch(`${base}/healthz`)).json()) as { upstream: { servers: { name: string; status: string }[] } };
      const status = Object.fromEntries(health.upstream.servers.map((s) => [s.name, s.status]));
      return (
        ready.status === 503 &&
        servers.every((s) => (s.http ? status[s.name] === 'down' && mentions(cause, s.name) : status[s.name] === 'up')) &&
        servers.every((s) => s.http || !mentions(cause, s.name))
      );
    },
    `/readyz 503 naming ${down.join(', ')} only, and the other servers up in /healthz`,
    60_000, // npx starts each server for the probes: slower than one server beside the rest of the suite
  );
}

/** Runs a serving proxy command until it is up, then stops it. */
async function checkServe(command: string, env: Record<string, string>): Promise<void> {
  const line = command.replace(/--port[ =]\d+/, '--port 0');
  const args = proxyArgs(simpleCommands(command)[0])!;
  const program = programWords(simpleCommands(command)[0]).map(unquote);
  const direct = program[0] === 'mcp-negotiate-proxy' || (program[0] === 'node' && program[1] === 'dist/main.js');
  const proc = spawn('bash', ['-c', line], {
    cwd: ROOT,
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      npm_config_update_notifier: 'false',
      npm_config_offline: 'true',
      MCP_PROXY_PORT: '0',
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  groups.add(proc.pid!);
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.on('close', (code, signal) => r({ code, signal })),
  );
  /** Waits for `check`; `afterExit`: what is waited for comes after the command's own process ended (npm's children outlive it). */
  const until = async (check: () => boolean | Promise<boolean>, what: string, ms = 20_000, afterExit = false) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await check()) return;
      if (!afterExit && (proc.exitCode !== null || proc.signalCode !== null))
        throw new Error(`${command}: exited before ${what}:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${command}: no ${what} within ${ms} ms:\n${stdout}\n${stderr}`);
  };
  try {
    if (args.includes('--stdio')) {
      proc.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'doc-test', version: '1' } } })}\n`,
      );
      await until(
        () => jsonDocuments(stdout).some((d) => containsJson(d, { id: 1 }) && typeof (d as { result?: unknown }).result === 'object'),
        'initialize result',
      );
      proc.stdin.end();
    } else {
      let url = '';
      await until(() => {
        const m = stderr
          .split('\n')
          .find((l) => l.includes('listening'))
          ?.match(/(http:\/\/[^\s"]+)/);
        url = m?.[1] ?? '';
        return Boolean(url);
      }, 'URL in the log');
      const base = new URL(url).origin;
      expect((await fetch(`${base}/healthz`)).status, `${command}: /healthz`).toBe(200);
      const servers = namedServers(args);
      if (servers.some((s) => s.http)) await checkSeveral(base, servers, until);
      else if (!/"kind":"http"/.test(stderr)) {
        // Several servers: npx starts each one for every probe, which takes longer beside the rest of the suite.
        await until(async () => (await fetch(`${base}/readyz`)).status === 200, '/readyz 200', servers.length > 1 ? 60_000 : undefined);
      }
      process.kill(-proc.pid!, 'SIGTERM');
    }
    const end = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(r, 10_000))]);
    expect(end, `${command}: did not stop`).toBeDefined();
    // The proxy itself exits 0; npm and npx, which got the signal too, may die of it.
    if (direct || args.includes('--stdio')) expect(end!.code, `${command}: exit code\n${stderr}`).toBe(0);
    else expect(end!.code === 0 || end!.signal === 'SIGTERM', `${command}: ${JSON.stringify(end)}\n${stderr}`).toBe(true);
    await until(
      () => {
        try {
          process.kill(-proc.pid!, 0);
          return false;
        } catch {
          return true;
        }
      },
      'end of every process it started',
      10_000,
      true,
    );
    groups.delete(proc.pid!);
  } finally {
    if (groups.has(proc.pid!)) {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        // gone
      }
      groups.delete(proc.pid!);
    }
  }
}

const CURL = 'curl() { command curl --fail-with-body --max-time 20 "$@"; }';

async function checkShell(unit: Unit): Promise<void> {
  const { block } = unit;
  const d = block.directives;
  const commands = shellCommands(block.code);
  expect(commands.length, `${name(block)} has no command`).toBeGreaterThan(0);
  if (d.coveredBy) {
    const covering = `${ROOT}${d.coveredBy}`;
    expect(existsSync(covering), `${name(block)}: ${d.coveredBy} does not exist`).toBe(true);
    const text = readFileSync(covering, 'utf8');
    for (const m of d.mentions) {
      expect(text, `${name(block)}: ${d.coveredBy} does not mention "${m}"`).toContain(m);
      expect(
        block.code.includes(m) || existsSync(`${ROOT}${m}`),
        `${name(block)}: "${m}" is neither in the block nor a file of the repository`,
      ).toBe(true);
    }
    return;
  }
  const port = new URL(shared.url).port;
  let printed = '';
  let script: string[] = [];
  let lastCode = 0;
  const flush = async () => {
    if (!script.length) return;
    const text = script.join('\n').replace(/(127\.0\.0\.1|localhost):8080\b/g, `127.0.0.1:${port}`);
    script = [];
    // npm and npx start slowly beside the rest of the suite on two cores: a generous bound, still finite
    const r = await run('bash', ['-c', `set -eo pipefail\n${CURL}\n${text}`], { env: d.env, timeoutMs: 90_000 });
    printed += r.stdout + r.stderr;
    lastCode = r.code ?? 128;
    if (lastCode !== d.exit)
      throw new Error(
        `${name(block)}: exit ${r.code ?? r.signal}, expected ${d.exit}:\n${text}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`,
      );
  };
  for (const command of commands) {
    const kind = kindOf(command);
    if (kind === 'elsewhere')
      throw new Error(`${name(block)}: "${command}" cannot run here; mark the block covered-by=<test file>; mentions=…`);
    if (kind === 'run' || (kind === 'serve' && d.exit !== 0)) {
      script.push(command);
      continue;
    }
    await flush();
    if (kind === 'npm') checkNpm(command);
    else await checkServe(command, d.env);
  }
  await flush();
  expect(lastCode).toBe(d.exit);
  for (const want of d.expect) expect(printed, `${name(block)}: output lacks "${want}"`).toContain(want);
  if (d.exit === 0) {
    if (/\svalidate\s/.test(` ${block.code} `)) expect(printed, `${name(block)}: validate did not print OK`).toMatch(/: OK/);
    if (/\s--version\b/.test(block.code)) expect(printed).toContain(PKG.version);
    if (/\s--help\b/.test(block.code)) expect(printed).toContain('Usage:');
  }
  checkOutputs(unit, printed);
}

// ---- TypeScript ------------------------------------------------------------------------

async function checkTs(unit: Unit, index: number): Promise<void> {
  const { block } = unit;
  const file = join(work, `snippet-${index}.mts`);
  writeFileSync(file, block.code.replace(/(127\.0\.0\.1|localhost):8080\b/g, sharedHost));
  const r = await run(process.execPath, ['--import', 'tsx', file], { env: block.directives.env });
  expect(r.code, `${name(block)}:\n${r.stdout}\n${r.stderr}`).toBe(block.directives.exit);
  for (const want of block.directives.expect) expect(r.stdout + r.stderr).toContain(want);
  checkOutputs(unit, r.stdout + r.stderr);
}

// ---- Python ----------------------------------------------------------------------------

async function checkPython(unit: Unit, index: number): Promise<void> {
  const { block } = unit;
  expect(existsSync(PYTHON), `${name(block)}: ${PYTHON} is missing: run sh test/python/setup.sh`).toBe(true);
  const file = join(work, `snippet-${index}.py`);
  writeFileSync(file, block.code.replace(/(127\.0\.0\.1|localhost):8080\b/g, sharedHost));
  const r = await run(PYTHON, [file], { env: block.directives.env, timeoutMs: 60_000 });
  expect(r.code, `${name(block)}:\n${r.stdout}\n${r.stderr}`).toBe(block.directives.exit);
  for (const want of block.directives.expect) expect(r.stdout + r.stderr).toContain(want);
  checkOutputs(unit, r.stdout + r.stderr);
}

// ---- MCP host configs ------------------------------------------------------------------

interface HostServer {
  type?: string;
  url?: string;
  headers?: Record<string, string>;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
}

/** Connects to each server of a host's config as the host would, and checks that the tags it gives are in effect. */
async function checkHostConfig(unit: Unit, index: number): Promise<void> {
  const { block } = unit;
  const config = JSON.parse(block.code) as { mcpServers?: Record<string, HostServer>; servers?: Record<string, HostServer> };
  const servers = Object.entries(config.mcpServers ?? config.servers ?? {});
  expect(servers.length, `${name(block)}: no mcpServers or servers`).toBeGreaterThan(0);
  const local = (s: string) => s.replace(/(127\.0\.0\.1|localhost):8080\b/g, sharedHost);
  for (const [serverName, server] of servers) {
    const where = `${name(block)} ${serverName}`;
    const client = new Client({ name: 'doc-test-host', version: '1.0.0' });
    const transport = server.url
      ? new StreamableHTTPClientTransport(new URL(local(server.url)), { requestInit: { headers: server.headers ?? {} } })
      : new StdioClientTransport({
          command: server.command!,
          args: (server.args ?? []).map(local),
          cwd: ROOT,
          env: {
            ...process.env,
            PATH: `${bin}:${process.env.PATH}`,
            npm_config_update_notifier: 'false',
            npm_config_offline: 'true',
            MCP_REMOTE_CONFIG_DIR: join(work, `mcp-remote-${index}`),
            ...server.env,
          },
          stderr: 'pipe',
        });
    let stderr = '';
    if (transport instanceof StdioClientTransport) transport.stderr?.on('data', (d) => (stderr += d));
    try {
      await client.connect(transport);
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools.length, where).toBeGreaterThan(0);
      if (!/MCP-Features|--features/.test(JSON.stringify(server))) continue;
      if (tools.includes('get_weather')) {
        const result = await client.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
        expect(result.structuredContent, `${where}: no structuredContent, so the tags were not in effect`).toBeDefined();
      } else expect(client.getInstructions(), `${where}: the tags are not in effect`).toMatch(/in effect for this session/);
    } catch (err) {
      throw new Error(`${where}: ${(err as Error).message}\n${stderr.slice(-2000)}`);
    } finally {
      await client.close();
    }
  }
}

// ---- the tests -------------------------------------------------------------------------

describe('documentation', () => {
  beforeAll(async () => {
    expect(existsSync(PROXY_MAIN), 'dist/ is built (npm run build)').toBe(true);
    gitStatus = status();
    work = rootLike(mkdtempSync(join(tmpdir(), 'doc-test-')));
    bin = join(work, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'mcp-negotiate-proxy'), `#!/bin/sh\nexec "${process.execPath}" "${PROXY_MAIN}" "$@"\n`);
    chmodSync(join(bin, 'mcp-negotiate-proxy'), 0o755);
    shared = await startProxy(['--config', `${ROOT}config/examples/variants.yaml`]);
    sharedHost = new URL(shared.url).host;
  });

  afterAll(async () => {
    for (const pgid of groups) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await stopAll();
    if (work) rmSync(work, { recursive: true, force: true });
    if (gitStatus !== undefined) expect(status(), 'the examples left files in the repository').toBe(gitStatus);
  });

  describe('code blocks', () => {
    UNITS.forEach((unit, index) => {
      const { block } = unit;
      it.concurrent(name(block), { timeout: 120_000 }, async () => {
        switch (block.lang) {
          case 'yaml':
          case 'yml':
            return checkYaml(unit, index);
          case 'sh':
          case 'bash':
          case 'shell':
            return checkShell(unit);
          case 'ts':
          case 'typescript':
            return checkTs(unit, index);
          case 'python':
            return checkPython(unit, index);
          case 'json':
            JSON.parse(block.code);
            if (block.directives.hostConfig) return checkHostConfig(unit, index);
            return;
          case 'text':
            expect(
              block.directives.illustration,
              `${name(block)}: a text block is an output (marker: output) or an illustration (marker: illustration)`,
            ).toBe(true);
            return;
          default:
            throw new Error(`${name(block)}: no check for language "${block.lang || '(none)'}"; label the fence`);
        }
      });
    });
  });

  describe('links', () => {
    for (const [file, text] of TEXT) {
      it(`${file}: relative links resolve`, () => {
        const broken: string[] = [];
        for (const { target, line } of relativeLinks(text)) {
          const [path, anchor] = target.split('#');
          const resolved = path ? resolve(dirname(`${ROOT}${file}`), decodeURIComponent(path)) : `${ROOT}${file}`;
          if (!existsSync(resolved)) broken.push(`${file}:${line}: ${target} (no such file)`);
          else if (anchor !== undefined && resolved.endsWith('.md') && !headingAnchors(readFileSync(resolved, 'utf8')).has(anchor)) {
            broken.push(`${file}:${line}: ${target} (no heading #${anchor})`);
          }
        }
        expect(broken).toEqual([]);
      });
    }

    // In the clone, npx installs the clone into its cache and runs `prepare`, rebuilding dist/ under every running proxy; elsewhere it looks for an unpublished package.
    it('no page runs the proxy through npx', () => {
      const npx = [...TEXT]
        .filter(([, text]) => /npx\s+(-y\s+)?mcp-negotiate-proxy|"npx",\s*"args":\s*\[\s*"mcp-negotiate-proxy"/.test(text))
        .map(([file]) => file);
      expect(npx).toEqual([]);
    });

    it('README.md links every file in docs/', () => {
      const linked = new Set(relativeLinks(TEXT.get('README.md')!).map((l) => l.target.split('#')[0]));
      expect(DOCS.filter((f) => f.startsWith('docs/') && !linked.has(f))).toEqual([]);
    });

    it('README.md stays short', () => {
      expect(TEXT.get('README.md')!.split('\n').length).toBeLessThanOrEqual(320);
    });

    it("README.md's first screen names the command that runs the proxy and the one that runs the tests, and how long the tests take, as docs/testing.md does", () => {
      const firstScreen = TEXT.get('README.md')!.split('\n').slice(0, 40).join('\n');
      const commands = extractBlocks('README.md', firstScreen)
        .filter((b) => b.lang === 'sh')
        .flatMap((b) => shellCommands(b.code));
      expect(commands).toEqual(expect.arrayContaining([expect.stringMatching(/^npm start\b/), expect.stringMatching(/^npm test\b/)]));
      const duration = /about (\d+)–(\d+) minutes on 2 cores/;
      const [, from, to] = firstScreen.match(duration) ?? [];
      expect(from, 'the README says how long npm test takes').toBeDefined();
      expect(TEXT.get('docs/testing.md')!.match(duration)?.slice(1)).toEqual([from, to]);
    });
  });

  describe('the reference is complete', () => {
    it('docs/error-codes.md names every error code the proxy answers with', async () => {
      const { PROXY_ERROR_CODES } = (await import(`${ROOT}dist/jsonrpc/errors.js`)) as { PROXY_ERROR_CODES: string[] };
      const text = TEXT.get('docs/error-codes.md')!;
      expect(PROXY_ERROR_CODES.filter((code) => !text.includes(`\`${code}\``))).toEqual([]);
    });

    it('docs/configuration.md names every config key (items of lists: anywhere in docs/)', async () => {
      const { configJsonSchema } = (await import(`${ROOT}dist/config/schema.js`)) as { configJsonSchema: () => Record<string, unknown> };
      const paths: string[] = [];
      const itemKeys = new Set<string>();
      type Node = { properties?: Record<string, Node>; anyOf?: Node[]; items?: Node };
      const walk = (node: Node | undefined, path: string, inItem: boolean) => {
        if (!node || typeof node !== 'object') return;
        for (const [key, child] of Object.entries(node.properties ?? {})) {
          if (inItem) itemKeys.add(key);
          else paths.push(path ? `${path}.${key}` : key);
          walk(child, path ? `${path}.${key}` : key, inItem);
        }
        for (const alt of node.anyOf ?? []) walk(alt, path, inItem);
        if (node.items) walk(node.items, `${path}[]`, true);
      };
      walk(configJsonSchema(), '', false);
      const config = TEXT.get('docs/configuration.md')!;
      expect(paths.filter((p) => !config.includes(`\`${p}\``))).toEqual([]);
      const allDocs = DOCS.filter((f) => f.startsWith('docs/'))
        .map((f) => TEXT.get(f)!)
        .join('\n');
      expect([...itemKeys].filter((k) => !allDocs.includes(`\`${k}\``) && !allDocs.includes(`${k}:`))).toEqual([]);
    });
  });
});
