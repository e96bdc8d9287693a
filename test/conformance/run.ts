/**
 * Run the official MCP conformance suite (@modelcontextprotocol/conformance,
 * server mode) against a Streamable HTTP URL and report one outcome per scenario.
 *
 *   import { runConformance } from './run.js';
 *   const results = await runConformance('http://127.0.0.1:3000/mcp');
 *
 *   node --import tsx test/conformance/run.ts <url> [scenario ...]   # prints a table
 *
 * The suite runs in a child process (Node 20 needs ./globsync-shim.mjs, see
 * there) with its result directory in a fresh temp dir:
 *   - no scenario list: one child, `server --url U --requirements 2025-11-25`,
 *     i.e. exactly the frozen 2025-11-25 server set (30 scored scenarios plus
 *     the 3 the revision runs but does not score);
 *   - explicit scenarios: one child per scenario, `--scenario S --spec-version
 *     2025-11-25` (the CLI rejects --requirements together with --scenario);
 *     a scenario not applicable at 2025-11-25 is reported 'skip'.
 * Each scenario writes <out>/server-<scenario>-<timestamp>/checks.json; a
 * scenario passes when none of its checks has status FAILURE (WARNING/INFO/
 * SKIPPED checks do not fail it, matching the CLI's own summary), unless
 * every check it wrote is SKIPPED: a placeholder that checked nothing is
 * reported 'skip', never 'pass' (see stand-ins.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export type ScenarioOutcome = 'pass' | 'fail' | 'skip';

export interface ConformanceCheck {
  id: string;
  name: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description?: string;
  errorMessage?: string;
}

export interface ScenarioResult {
  outcome: ScenarioOutcome;
  checks: ConformanceCheck[];
  /** Failed (and warning) checks, formatted `id: message`, for quick reporting. */
  problems: string[];
}

export interface RunOptions {
  /** Scenario names; default: the suite's 2025-11-25 requirement set. */
  scenarios?: string[];
  /** Total budget for the whole run; the child is killed when it runs out. Default 300 s. */
  timeoutMs?: number;
  /** Spec revision (default 2025-11-25). */
  specVersion?: string;
  /** The scenarios test an extension (e.g. tasks-*): the suite runs them on their own timeline, so no --spec-version is given. */
  extension?: boolean;
  /** Per-scenario timeout handed to the suite (--timeout). Default 30 s. */
  scenarioTimeoutMs?: number;
  /** Receives the suite's stdout/stderr as it arrives (e.g. process.stderr.write). */
  onOutput?: (chunk: string) => void;
}

export const SPEC_VERSION = '2025-11-25';

/**
 * Snapshot of `conformance list --server --requirements 2025-11-25` for
 * @modelcontextprotocol/conformance 0.2.0-alpha.12. Use listServerScenarios()
 * for the live answer from the installed suite.
 */
export const SERVER_SCENARIOS_2025_11_25 = {
  scored: [
    'server-initialize',
    'logging-set-level',
    'ping',
    'completion-complete',
    'tools-list',
    'tools-call-simple-text',
    'tools-call-image',
    'tools-call-audio',
    'tools-call-embedded-resource',
    'tools-call-mixed-content',
    'tools-call-with-logging',
    'tools-call-error',
    'tools-call-with-progress',
    'tools-call-sampling',
    'tools-call-elicitation',
    'elicitation-sep1034-defaults',
    'server-sse-multiple-streams',
    'elicitation-sep1330-enums',
    'resources-list',
    'resources-read-text',
    'resources-read-binary',
    'resources-templates-read',
    'resources-subscribe',
    'resources-unsubscribe',
    'prompts-list',
    'prompts-get-simple',
    'prompts-get-with-args',
    'prompts-get-embedded-resource',
    'prompts-get-with-image',
    'dns-rebinding-protection',
  ],
  /** Run under --requirements 2025-11-25 but never scored (added-after-release, pending). */
  notScored: ['server-session-lifecycle', 'json-schema-2020-12', 'server-sse-polling'],
} as const;

const require = createRequire(import.meta.url);
const SHIM = fileURLToPath(new URL('./globsync-shim.mjs', import.meta.url));
const CLI = path.join(path.dirname(require.resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');
const TIMESTAMP_SUFFIX = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

interface ChildResult {
  stdout: string;
  code: number | null;
  timedOut: boolean;
}

/** Run the conformance CLI with the shim; kill its process group at the deadline. */
function runCli(args: string[], deadline: number, onOutput?: (s: string) => void): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', SHIM, CLI, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      detached: true, // own process group, so a kill reaches anything it spawned
    });
    let stdout = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      onOutput?.(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => onOutput?.(d));
    const kill = (sig: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        /* already gone */
      }
    };
    let hardKill: NodeJS.Timeout | undefined;
    const timer = setTimeout(
      () => {
        timedOut = true;
        kill('SIGTERM');
        hardKill = setTimeout(() => kill('SIGKILL'), 2000);
      },
      Math.max(0, deadline - Date.now()),
    );
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (hardKill) clearTimeout(hardKill);
      resolve({ stdout, code, timedOut });
    });
  });
}

async function readResults(outDir: string): Promise<Map<string, ConformanceCheck[]>> {
  const found = new Map<string, ConformanceCheck[]>();
  let entries: string[] = [];
  try {
    entries = await readdir(outDir);
  } catch {
    return found;
  }
  for (const dir of entries.sort()) {
    if (!dir.startsWith('server-')) continue;
    const scenario = dir.slice('server-'.length).replace(TIMESTAMP_SUFFIX, '');
    try {
      const checks = JSON.parse(await readFile(path.join(outDir, dir, 'checks.json'), 'utf8'));
      found.set(scenario, checks);
    } catch {
      // directory without checks.json: scenario was skipped or never finished
    }
  }
  return found;
}

function toResult(checks: ConformanceCheck[]): ScenarioResult {
  const problems = checks
    .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING' || c.status === 'SKIPPED')
    .map((c) => `${c.status === 'FAILURE' ? '' : `(${c.status.toLowerCase()}) `}${c.id}: ${c.errorMessage ?? c.description ?? ''}`);
  const checkedNothing = checks.length > 0 && checks.every((c) => c.status === 'SKIPPED');
  return {
    outcome: checks.some((c) => c.status === 'FAILURE') ? 'fail' : checkedNothing ? 'skip' : 'pass',
    checks,
    problems,
  };
}

/** Ask the installed suite which server scenarios a revision requires. */
export async function listServerScenarios(
  specVersion = SPEC_VERSION,
  timeoutMs = 30_000,
): Promise<{ scored: string[]; notScored: string[] }> {
  const { stdout } = await runCli(['list', '--server', '--requirements', specVersion], Date.now() + timeoutMs);
  const scored: string[] = [];
  const notScored: string[] = [];
  let section: 'none' | 'server' | 'notScored' = 'none';
  for (const line of stdout.split('\n')) {
    if (/^Server scenarios/.test(line)) section = 'server';
    else if (/^Client scenarios/.test(line)) section = 'none';
    else if (/^Run and reported, but never scored/.test(line)) section = 'notScored';
    const item = /^\s+- (\S+)(?: \[(\w+)\])?/.exec(line);
    if (!item) continue;
    if (section === 'server') scored.push(item[1]);
    else if (section === 'notScored' && item[2] === 'server') notScored.push(item[1]);
  }
  return { scored, notScored };
}

/** Like runConformance, but keeps every scenario's checks and failure messages. */
export async function runConformanceDetailed(url: string, opts: RunOptions = {}): Promise<Map<string, ScenarioResult>> {
  const specVersion = opts.specVersion ?? SPEC_VERSION;
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  const scenarioTimeout = String(opts.scenarioTimeoutMs ?? 30_000);
  const outDir = await mkdtemp(path.join(tmpdir(), 'mcp-conformance-'));
  const results = new Map<string, ScenarioResult>();
  const missing = (why: string): ScenarioResult => ({ outcome: 'fail', checks: [], problems: [why] });

  try {
    if (!opts.scenarios) {
      const child = await runCli(
        ['server', '--url', url, '--requirements', specVersion, '--timeout', scenarioTimeout, '-o', outDir],
        deadline,
        opts.onOutput,
      );
      const written = await readResults(outDir);
      // Report in the suite's order; a scenario announced on stdout without a
      // result file never finished (killed at the deadline, or crashed).
      for (const m of child.stdout.matchAll(/^=== Running scenario: (\S+) ===$/gm)) {
        const checks = written.get(m[1]);
        results.set(m[1], checks ? toResult(checks) : missing(child.timedOut ? 'killed: total timeout reached' : 'no result written'));
      }
      for (const [scenario, checks] of written) if (!results.has(scenario)) results.set(scenario, toResult(checks));
      if (child.timedOut && specVersion === SPEC_VERSION) {
        const expected = [...SERVER_SCENARIOS_2025_11_25.scored, ...SERVER_SCENARIOS_2025_11_25.notScored];
        for (const s of expected) if (!results.has(s)) results.set(s, missing('not run: total timeout reached'));
      }
      if (results.size === 0) {
        throw new Error(
          `conformance suite produced no results (exit ${child.code}${child.timedOut ? ', timed out' : ''}):\n` + child.stdout.slice(-2000),
        );
      }
    } else {
      for (const scenario of opts.scenarios) {
        if (Date.now() >= deadline) {
          results.set(scenario, missing('not run: total timeout reached'));
          continue;
        }
        const child = await runCli(
          [
            'server',
            '--url',
            url,
            '--scenario',
            scenario,
            ...(opts.extension ? [] : ['--spec-version', specVersion]),
            '--timeout',
            scenarioTimeout,
            '-o',
            outDir,
          ],
          deadline,
          opts.onOutput,
        );
        const checks = (await readResults(outDir)).get(scenario);
        if (checks) results.set(scenario, toResult(checks));
        else if (/^SKIPPED: scenario/m.test(child.stdout)) {
          results.set(scenario, { outcome: 'skip', checks: [], problems: ['not applicable at ' + specVersion] });
        } else {
          results.set(
            scenario,
            missing(child.timedOut ? 'killed: total timeout reached' : `no result (exit ${child.code}): ${child.stdout.slice(-500)}`),
          );
        }
      }
    }
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
  return results;
}

/** Run the suite against `url`; one outcome per scenario. */
export async function runConformance(url: string, opts: RunOptions = {}): Promise<Map<string, ScenarioOutcome>> {
  const detailed = await runConformanceDetailed(url, opts);
  return new Map([...detailed].map(([name, r]) => [name, r.outcome]));
}

// ---------------------------------------------------------------------------
// CLI: node --import tsx test/conformance/run.ts <url> [scenario ...]
// ---------------------------------------------------------------------------

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [url, ...scenarios] = process.argv.slice(2);
  if (!url) {
    console.error('usage: node --import tsx test/conformance/run.ts <url> [scenario ...]');
    process.exit(2);
  }
  const started = Date.now();
  const results = await runConformanceDetailed(url, {
    scenarios: scenarios.length ? scenarios : undefined,
    onOutput: process.env.CONFORMANCE_VERBOSE ? (s) => process.stderr.write(s) : undefined,
  });
  const notScored = new Set<string>(SERVER_SCENARIOS_2025_11_25.notScored);
  const width = Math.max(...[...results.keys()].map((k) => k.length));
  for (const [name, r] of results) {
    const tag = notScored.has(name) ? ' (not scored)' : '';
    console.log(`${r.outcome.toUpperCase().padEnd(4)}  ${name.padEnd(width)}${tag}`);
    for (const p of r.problems) console.log(`        ${p.split('\n')[0].slice(0, 300)}`);
  }
  const count = (o: ScenarioOutcome) => [...results.values()].filter((r) => r.outcome === o).length;
  console.log(`\n${count('pass')} pass, ${count('fail')} fail, ${count('skip')} skip in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  process.exit(count('fail') > 0 ? 1 : 0);
}
