import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../jsonrpc/errors.js';
import { loadConfig } from './load.js';
import { clientSessions } from '../fronts/http/limit-defaults.js';
import { configJsonSchema } from './schema.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-config-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the documented defaults with no file', () => {
    const config = loadConfig({});
    expect(config.listen).toMatchObject({
      transport: 'http',
      host: '127.0.0.1',
      port: 8080,
      path: '/mcp',
      maxBodyBytes: 4194304,
      responseMode: 'auto',
      maxSessions: 1000,
    });
    // Unset: what applies depends on the bind and authentication (src/fronts/http/limit-defaults.ts).
    expect(config.listen.perClient).toEqual({});
    // Sessions per client: half the isolated stdio processes (the built-in demo runs over stdio), 32 for an HTTP upstream.
    expect(clientSessions(config)).toBe(8);
    expect(clientSessions(loadConfig({ overrides: { upstream: { url: 'http://127.0.0.1:1/mcp' } } }))).toBe(32);
    expect(config.listen.connections).toEqual({
      headersTimeoutMs: 10000,
      bodyTimeoutMs: 30000,
      keepAliveTimeoutMs: 5000,
      max: 4096,
      perAddress: 256,
    });
    expect(config.listen.maxJsonDepth).toBe(64);
    expect(config.timeouts).toEqual({
      requestMs: 60000,
      initializeMs: 120000,
      sessionIdleMs: 600000,
      sessionIdleNoStreamMs: 60000,
      sessionMaxAgeMs: 86400000,
      shutdownGraceMs: 2000,
    });
    expect(config.upstream.url ?? config.upstream.command).toBeUndefined();
    expect(config.upstream).toMatchObject({ inheritEnv: false, sessions: 'isolated', maxProcesses: 16 });
    expect(config.auth).toMatchObject({ tokens: [], allowUnauthenticated: false });
    expect(config.replicas.secret).toBeUndefined();
  });

  it('loads the shipped default.yaml and examples', () => {
    for (const f of [
      'config/default.yaml',
      'config/examples/everything.yaml',
      'config/examples/everything-replicas.yaml',
      'config/examples/stdio-server.yaml',
      'config/examples/weather-prose.yaml',
      'bench/proxy.yaml',
    ]) {
      expect(() => loadConfig({ file: f, env: {} })).not.toThrow();
    }
  });

  it('interpolates ${VAR} and ${VAR:-fallback}', () => {
    const path = file('env.yaml', 'upstream:\n  url: ${BASE:-http://127.0.0.1:1}/mcp\n  headers:\n    Authorization: Bearer ${TOKEN}\n');
    const config = loadConfig({ file: path, env: { TOKEN: 's3cret' } });
    expect(config.upstream).toMatchObject({ url: 'http://127.0.0.1:1/mcp', headers: { Authorization: 'Bearer s3cret' } });
  });

  it('names file, line, column and key for every problem at once', () => {
    const path = file('bad.yaml', 'listen:\n  port: "abc"\n  bogus: 1\nupstream:\n  url: ftp://x\n');
    expect(problems(() => loadConfig({ file: path }))).toEqual([
      `${path}:5:8: upstream.url: must be an http:// or https:// URL`,
      `${path}:2:9: listen.port: Invalid input: expected number, received string`,
      `${path}:2:3: listen: unknown key(s) "bogus"`,
    ]);
  });

  it('reports unset variables, YAML syntax errors, non-mappings and missing files', () => {
    expect(problems(() => loadConfig({ file: file('v.yaml', 'upstream:\n  headers:\n    A: ${NOPE}\n'), env: {} }))[0]).toMatch(
      /v\.yaml:3:8: upstream\.headers\.A: environment variable NOPE is not set/,
    );
    expect(problems(() => loadConfig({ file: file('s.yaml', 'listen: [\n') }))[0]).toMatch(/s\.yaml:2:1: YAML syntax error/);
    expect(problems(() => loadConfig({ file: file('l.yaml', '- a\n- b\n') }))[0]).toMatch(/must be a YAML mapping/);
    expect(problems(() => loadConfig({ file: join(dir, 'missing.yaml') }))[0]).toMatch(/cannot read the config file \(ENOENT\)/);
    expect(problems(() => loadConfig({ file: file('both.yaml', 'upstream:\n  url: http://127.0.0.1:1/mcp\n  command: x\n') }))[0]).toMatch(
      /either `url` or `command`/,
    );
  });

  it('refuses settings that would weaken the hardening, saying what to do instead', () => {
    expect(problems(() => loadConfig({ file: file('t.yaml', 'listen:\n  trustProxy: true\n') }))[0]).toMatch(
      /t\.yaml:2:15: listen\.trustProxy: true would let any client name its own address.*list the balancer addresses/,
    );
    expect(problems(() => loadConfig({ file: file('c.yaml', 'listen:\n  trustProxy: ["10.0.0.0/8", "nope"]\n') }))[0]).toMatch(
      /listen\.trustProxy\.1: an IP address, a CIDR/,
    );
    expect(problems(() => loadConfig({ file: file('m.yaml', 'modern:\n  stateSecret: sixteen-chars-xx\n') }))[0]).toMatch(
      /modern\.stateSecret: at least 32 characters/,
    );
    expect(
      problems(() =>
        loadConfig({
          file: file('j.yaml', 'auth:\n  jwt: { jwksUrl: "http://127.0.0.1:1/k", issuer: i, audience: a, algorithms: [HS256] }\n'),
        }),
      )[0],
    ).toMatch(/auth\.jwt\.algorithms\.0/);
  });

  it('lets overrides (environment, flags) win over the file', () => {
    const path = file('o.yaml', 'listen:\n  port: 9000\n  host: 127.0.0.2\n');
    const config = loadConfig({ file: path, overrides: { listen: { port: 9100, host: undefined } } });
    expect(config.listen).toMatchObject({ port: 9100, host: '127.0.0.2' });
  });

  it('keeps config/config.schema.json in step with the zod schema (npm run schema regenerates it)', () => {
    expect(JSON.parse(readFileSync('config/config.schema.json', 'utf8'))).toEqual(configJsonSchema());
  });
});
