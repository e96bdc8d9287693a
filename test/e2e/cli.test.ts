/**
 * The CLI as a user meets it: help, version, validate, bad flags and configs (exit 2 with a
 * message, no stack trace), a busy port, and the zero-config start in front of the demo server.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { get as httpGet } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { connectViaProxy } from '../helpers/clients.js';
import { logged, PROXY_MAIN, startProxy, stopAll } from '../helpers/processes.js';
import { postWithHost } from '../helpers/raw.js';

const run = async (args: string[], env: NodeJS.ProcessEnv = {}) => {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PROXY_MAIN, ...args], {
      env: { ...process.env, ...env },
      timeout: 15_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
};

/** A GET with an arbitrary Host header (fetch forbids setting it); resolves with the status. */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

describe('the mcp-negotiate-proxy CLI', () => {
  afterAll(stopAll);

  it('prints help and the package version', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    for (const flag of [
      '--upstream',
      '--stdio',
      '--host',
      '--port',
      '--config',
      '--log-level',
      '--request-timeout',
      'MCP_PROXY_UPSTREAM',
    ]) {
      expect(help.stdout).toContain(flag);
    }
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect((await run(['--version'])).stdout.trim()).toBe(pkg.version);
  });

  it('validates configs: OK with exit 0, precise problems with exit 2', async () => {
    expect(await run(['validate', '--config', 'config/default.yaml'])).toMatchObject({
      code: 0,
      stdout: 'config/default.yaml: OK (8 content-negotiation rules)\n',
    });
    const bad = join(mkdtempSync(join(tmpdir(), 'cli-')), 'bad.yaml');
    writeFileSync(bad, 'timeouts:\n  requestMs: -5\n');
    const r = await run(['validate', '--config', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${bad}:2:14: timeouts.requestMs: Too small`);
    expect(r.stderr).not.toContain('    at ');
  });

  it('refuses bad usage and a bad config at start-up with exit 2 and no stack trace', async () => {
    for (const args of [['--port', 'eighty'], ['--bogus'], ['--config', '/nonexistent.yaml']]) {
      const r = await run(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^mcp-negotiate-proxy: /);
      expect(r.stderr).not.toContain('    at ');
    }
    expect((await run([], { MCP_PROXY_LOG_LEVEL: 'loud' })).stderr).toContain('logLevel');
    expect((await run(['--bogus'])).stderr).toMatch(/unknown option --bogus\nOptions: --upstream, .*--fail-fast/);
  });

  it('suggests the flag a typo meant, and lists only the options of the command being run', async () => {
    const typo = await run(['--upstrem', 'node server.js']);
    expect(typo.code).toBe(2);
    const [first, options] = typo.stderr.split('\n');
    expect(first).toBe('mcp-negotiate-proxy: unknown option --upstrem (did you mean --upstream?)');
    expect(options).toMatch(/^Options: --upstream, /);
    for (const flag of ['--method', '--name', '--input', '--principal']) expect(options.split(', ')).not.toContain(flag);
    const explain = await run(['explain', '--upstream', 'node server.js']);
    expect(explain.code).toBe(2);
    expect(explain.stderr).toContain(
      '--upstream is not an option of explain; it belongs to serving and validate\nOptions of explain: --config, --features, --method, --name, --input, --principal, --path, --client-name, --features-header, --help, --version\n',
    );
  });

  it('validate reports every problem of a file in one pass (schema, plugins, rules) with file:line:col', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-cli-'));
    const file = join(dir, 'broken.yaml');
    writeFileSync(
      file,
      'listen:\n  port: "x"\ncontentNegotiation:\n  rules:\n    - when: { features: ["!!bad"] }\n      apply: [{ nosuch: {} }]\n  plugins: ["./missing-plugin.js"]\n',
    );
    const r = await run(['validate', '--config', file]);
    expect(r.code).toBe(2);
    const lines = r.stderr.split('\n');
    expect(lines).toContain(`  ${file}:2:9: listen.port: Invalid input: expected number, received string`);
    expect(lines.some((l) => l.startsWith(`  ${file}:7:13: contentNegotiation.plugins[0]: cannot load plugin`))).toBe(true);
    expect(lines).toContain(
      `  ${file}:5:26: contentNegotiation.rules[0].when.features[0]: "!!bad" does not match name, !name, name=value or name!=value`,
    );
    expect(lines.some((l) => l.startsWith(`  ${file}:6:15: contentNegotiation.rules[0].apply[0]: unknown transformer "nosuch"`))).toBe(
      true,
    );
  });

  it('explains a broken --input with a message, not a stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-cli-'));
    writeFileSync(join(dir, 'bad.json'), '{bad');
    writeFileSync(join(dir, 'list.json'), '[1, 2]');
    const cases: Array<[string, RegExp]> = [
      [join(dir, 'bad.json'), /--input .*bad\.json: not JSON/],
      [join(dir, 'missing.json'), /--input .*missing\.json: cannot read it \(ENOENT\)/],
      [join(dir, 'list.json'), /expected a result object or a JSON-RPC response, got an array/],
    ];
    for (const [input, message] of cases) {
      const r = await run(['explain', '--features', 'format=json', '--input', input]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toContain('    at ');
    }
  });

  it('says when the port is taken', async () => {
    const first = await startProxy([]);
    const port = new URL(first.url).port;
    const r = await run(['--port', port]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('EADDRINUSE');
    expect(r.stderr).toContain('--port');
  });

  it('fronts the built-in demo server with no options at all', async () => {
    const conn = await connectViaProxy('http', undefined);
    const tools = (await conn.client.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(['get_weather', 'plan_journey', 'convert_units']));
    const weather = await conn.client.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
    expect((weather.content as Array<{ text: string }>)[0].text).toContain('Bern');
    const health = await fetch(conn.proxy!.url.replace('/mcp', '/healthz'));
    expect(await health.json()).toMatchObject({ status: 'ok', upstream: { kind: 'stdio' }, sessions: 1 });
    const ready = await fetch(conn.proxy!.url.replace('/mcp', '/readyz'));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', ready: true });
    await logged(conn.proxy!, (e) => e.msg === 'upstream ready', 10_000, 'the start-up check in the log');
    // Probes may name the pod's IP as Host; the MCP endpoint keeps its DNS-rebinding protection.
    for (const path of ['/healthz', '/readyz', '/metrics'])
      expect(await getWithHost(conn.proxy!.url.replace('/mcp', path), '10.1.2.3:8080')).toBe(200);
    expect(await postWithHost(conn.proxy!.url, '10.1.2.3:8080', { jsonrpc: '2.0', id: 1, method: 'ping' })).toBe(403);
    await conn.close();
  });
});
