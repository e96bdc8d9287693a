/**
 * `validate` and serving check a config the same way: serving a broken config refuses it with
 * exactly the problems `validate` lists (schema, plugins, rules, and what a start refuses, such
 * as a non-loopback bind without authentication), and every shipped example that `validate`
 * calls OK also serves.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, PROXY_MAIN, ROOT, startProxy, stopAll } from '../helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'config-check-'));

async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PROXY_MAIN, ...args], {
      env: { ...process.env, ...env },
      timeout: 20_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The problem lines of an `invalid configuration` report. */
const problems = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('  '));

describe('validate and serving check a config the same way', () => {
  it('serving refuses a broken config with exactly the problems validate reports', async () => {
    const schemaBroken = join(dir, 'schema-broken.yaml');
    writeFileSync(
      schemaBroken,
      'listen:\n  port: "x"\ncontentNegotiation:\n  rules:\n    - when: { features: ["!!bad"] }\n      apply: [{ nosuch: {} }]\n  plugins: ["./missing-plugin.js"]\n',
    );
    const exposed = join(dir, 'exposed.yaml');
    writeFileSync(exposed, 'listen:\n  host: 0.0.0.0\n  port: 0\ncontentNegotiation:\n  rules:\n    - apply: [{ nosuch: {} }]\n');
    for (const [file, expected] of [
      [schemaBroken, 4],
      [exposed, 2],
    ] as const) {
      const validate = await run(['validate', '--config', file]);
      const serve = await run(['--config', file]); // no --port: it would mend the first file
      expect(validate.code, file).toBe(2);
      expect(serve.code, file).toBe(2);
      expect(problems(validate.stderr)).toHaveLength(expected);
      expect(serve.stderr).toBe(validate.stderr);
    }
    const report = problems((await run(['validate', '--config', exposed])).stderr);
    expect(report[0]).toMatch(/exposed\.yaml:6:15: contentNegotiation\.rules\[0\]\.apply\[0\]: unknown transformer "nosuch"/);
    expect(report[1]).toBe(
      `  ${exposed}:2:9: listen.host: 0.0.0.0 is reachable from other machines, and no authentication is configured: anyone who reaches the port would use the upstream. Configure auth.tokens or auth.jwt, pass --allow-unauthenticated (MCP_PROXY_ALLOW_UNAUTHENTICATED=1) if something in front of the proxy authenticates, or listen on loopback only (--host 127.0.0.1).`,
    );
  });

  it('validate checks the start the same options would make: a host from the environment, an upstream command from a flag', async () => {
    const viaEnv = await run(['validate'], { MCP_PROXY_HOST: '0.0.0.0' });
    expect(viaEnv.code).toBe(2);
    expect(problems(viaEnv.stderr)).toEqual([
      expect.stringMatching(
        /^ {2}listen\.host \(from the command line or environment\): 0\.0\.0\.0 is reachable .*--allow-unauthenticated/,
      ),
    ]);
    expect((await run(['validate'], { MCP_PROXY_HOST: '0.0.0.0', MCP_PROXY_ALLOW_UNAUTHENTICATED: '1' })).code).toBe(0);
    const quote = await run(['validate', '--upstream', "node 'server.js"]);
    expect(problems(quote.stderr)).toEqual([
      "  upstream.command (from the command line or environment): unclosed ' quote in command: node 'server.js",
    ]);
    expect(await run(['--port', '0', '--upstream', "node 'server.js"])).toMatchObject({ code: 2, stderr: quote.stderr });
  });
});

describe("a server's own rules", () => {
  it("report their problems where the file has them, and leave the section's rules their own places", async () => {
    const file = join(dir, 'server-rules.yaml');
    writeFileSync(
      file,
      [
        'upstreams:',
        '  - name: memory',
        '    command: node memory.js',
        '    rules:',
        '      - when: { name: read_graph }',
        '        apply: [{ markdown: {} }]',
        '  - name: files',
        '    command: node files.js',
        '    rules:',
        '      - apply: [{ nosuch: {} }]',
        'contentNegotiation:',
        '  rules:',
        '    - when: { name: x }',
        '      apply: [{ alsonosuch: {} }]',
        '',
      ].join('\n'),
    );
    const r = await run(['validate', '--config', file]);
    expect(r.code).toBe(2);
    expect(problems(r.stderr)).toEqual([
      expect.stringMatching(/^ {2}.*server-rules\.yaml:10:\d+: upstreams\[1\]\.rules\[0\]\.apply\[0\]: unknown transformer "nosuch"/),
      expect.stringMatching(
        /^ {2}.*server-rules\.yaml:14:\d+: contentNegotiation\.rules\[0\]\.apply\[0\]: unknown transformer "alsonosuch"/,
      ),
    ]);
  });
});

describe('warnings', () => {
  afterAll(stopAll);

  it('validate and serving warn about a rule waiting for a tag no client is known to send, and go on', async () => {
    const typo = join(dir, 'typo.yaml');
    writeFileSync(typo, 'contentNegotiation:\n  rules:\n    - when: { features: [agent, format=yml] }\n      apply: [{ markdown: {} }]\n');
    const validate = await run(['validate', '--config', typo]);
    expect(validate).toMatchObject({ code: 0, stdout: `${typo}: OK (9 content-negotiation rules, 1 warning(s))\n` });
    expect(validate.stderr).toBe(
      `mcp-negotiate-proxy: warning: ${typo}:3:33: contentNegotiation.rules[0].when.features[1]: "yml" is not a registered value of format (json, text, markdown); no client is known to send it\n`,
    );
    const proxy = await startProxy(['--config', typo, '--port', '0']);
    expect(proxy.stderr()).toContain('no client is known to send it');
    expect(await proxy.stop()).toBe(0);
  });
});

describe('the shipped examples', () => {
  afterAll(stopAll);
  const examples = readdirSync(`${ROOT}config/examples`).filter((f) => f.endsWith('.yaml'));

  /** Values for the variables the examples reference (a test for a new one fails until it is given here). */
  async function variablesOf(text: string): Promise<NodeJS.ProcessEnv> {
    const known: Record<string, () => Promise<string> | string> = {
      UPSTREAM_URL: async () => `http://127.0.0.1:${await freePort()}/mcp`, // nothing listens: serving starts all the same
      BALANCER_ADDRESS: () => '127.0.0.1',
      // several-servers.yaml: the stdio servers' packages, server-memory's graph, server-filesystem's folder
      MCP_SERVERS: () => `${ROOT}node_modules`,
      MEMORY_FILE_PATH: () => join(dir, 'memory.jsonl'),
      FILES_ROOT: () => `${ROOT}docs`,
    };
    const env: NodeJS.ProcessEnv = {};
    const live = text
      .split('\n')
      .map((l) => l.replace(/(^|\s)#.*$/, ''))
      .join('\n');
    for (const [, name] of live.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)) {
      if (!known[name]) throw new Error(`an example references \${${name}}: give this test a value for it`);
      env[name] = await known[name]();
    }
    return env;
  }

  it('are all there', () => {
    expect(examples).toEqual(
      expect.arrayContaining([
        'everything.yaml',
        'everything-replicas.yaml',
        'negotiation.yaml',
        'several-servers.yaml',
        'stdio-server.yaml',
        'variants.yaml',
        'weather-prose.yaml',
      ]),
    );
  });

  it.each(examples)('%s validates, and serves', async (name) => {
    const file = `config/examples/${name}`;
    const env = await variablesOf(readFileSync(`${ROOT}${file}`, 'utf8'));
    const validate = await run(['validate', '--config', file], env);
    expect(validate.stderr).toBe('');
    expect(validate).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(new RegExp(`^${file}: OK \\(\\d+ content-negotiation rules\\)\\n$`)),
    });
    const proxy = await startProxy(['--config', file], env);
    expect(new URL(proxy.url).hostname).toBe('127.0.0.1');
    expect((await fetch(new URL('/healthz', proxy.url))).status).toBe(200);
    expect(await proxy.stop()).toBe(0);
  });
});
