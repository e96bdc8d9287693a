import { describe, expect, it } from 'vitest';
import { UsageError } from '../jsonrpc/errors.js';
import { parseCli } from './args.js';

/** The UsageError's message for a command line that must not parse. */
function message(argv: string[]): string {
  try {
    parseCli(argv, {});
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${argv.join(' ')} parsed`);
}

describe('parseCli', () => {
  it('maps flags to config overrides', () => {
    const r = parseCli(['--upstream', 'node server.js', '--port', '9000', '--stdio', '--request-timeout', '500'], {});
    expect(r.command).toBe('serve');
    expect(r.overrides).toMatchObject({
      upstream: { command: 'node server.js' },
      listen: { transport: 'stdio', port: 9000 },
      timeouts: { requestMs: 500 },
    });
    expect(parseCli(['--upstream-era', 'modern'], {}).overrides).toMatchObject({ upstream: { era: 'modern' } });
    expect(parseCli([], { MCP_PROXY_UPSTREAM_ERA: 'legacy' }).overrides).toMatchObject({ upstream: { era: 'legacy' } });
  });

  it("passes --env NAME=VALUE and --env NAME (the proxy's own value) to a stdio upstream, and refuses what it cannot pass", () => {
    const r = parseCli(['--env', 'A=1=2', '--env', 'TOKEN'], { TOKEN: 'secret' });
    expect(r.overrides.upstream).toEqual({ env: { A: '1=2', TOKEN: 'secret' } });
    expect(() => parseCli(['--env', 'MISSING'], {})).toThrow(/no variable MISSING/);
    expect(() => parseCli(['--env', '=x'], {})).toThrow(/NAME or NAME=VALUE/);
  });

  it('treats http(s) URLs as HTTP upstreams', () => {
    expect(parseCli(['--upstream', 'HTTPS://example.test/mcp'], {}).overrides.upstream).toMatchObject({ url: 'HTTPS://example.test/mcp' });
  });

  it('reads MCP_PROXY_* variables, with flags winning', () => {
    const env = {
      MCP_PROXY_UPSTREAM: 'http://127.0.0.1:1/mcp',
      MCP_PROXY_PORT: '7000',
      MCP_PROXY_STDIO: 'true',
      MCP_PROXY_CONFIG: 'x.yaml',
      MCP_PROXY_LOG_LEVEL: 'debug',
      MCP_PROXY_STATE_SECRET: 'a-long-shared-secret',
    };
    const r = parseCli(['--port', '7001'], env);
    expect(r.configFile).toBe('x.yaml');
    expect(r.overrides).toMatchObject({
      upstream: { url: 'http://127.0.0.1:1/mcp' },
      listen: { port: 7001, transport: 'stdio' },
      logLevel: 'debug',
      modern: { stateSecret: 'a-long-shared-secret' },
    });
  });

  it('recognises subcommands, help and version', () => {
    expect(parseCli(['validate', '--config', 'a.yaml'], {})).toMatchObject({ command: 'validate', configFile: 'a.yaml' });
    expect(parseCli(['schema'], {}).command).toBe('schema');
    expect(parseCli(['-h'], {}).command).toBe('help');
    expect(parseCli(['--version'], {}).command).toBe('version');
  });

  it('reads pins list, pins accept|reject <tool>… or --all, and explains a mistake', () => {
    expect(parseCli(['pins', 'accept', 'weather', 'news', '--config', 'a.yaml'], {})).toMatchObject({
      command: 'pins',
      configFile: 'a.yaml',
      pins: { action: 'accept', tools: ['weather', 'news'], all: false },
    });
    expect(parseCli(['pins', 'reject', '--all'], {}).pins).toEqual({ action: 'reject', tools: [], all: true });
    expect(parseCli(['pins', 'list'], {}).pins).toEqual({ action: 'list', tools: [], all: false });
    expect(() => parseCli(['pins', 'accept'], {})).toThrow('pins accept: name the tools, or give --all (not both)');
    expect(() => parseCli(['pins', 'accept', 'weather', '--all'], {})).toThrow('not both');
    expect(() => parseCli(['pins', 'approve', 'weather'], {})).toThrow('pins: unknown action "approve"');
    expect(() => parseCli(['pins', 'list', '--upstream', 'x'], {})).toThrow('--upstream is not an option of pins');
  });

  it('gives --fail-fast its own time limit: 30 s unless --fail-fast-timeout or MCP_PROXY_FAIL_FAST_TIMEOUT says otherwise', () => {
    expect(parseCli(['--fail-fast'], {})).toMatchObject({ failFast: true, failFastTimeoutMs: 30_000 });
    expect(parseCli(['--fail-fast', '--fail-fast-timeout', '5000'], { MCP_PROXY_FAIL_FAST_TIMEOUT: '9000' }).failFastTimeoutMs).toBe(5000);
    expect(parseCli([], { MCP_PROXY_FAIL_FAST: '1', MCP_PROXY_FAIL_FAST_TIMEOUT: '9000' }).failFastTimeoutMs).toBe(9000);
    expect(() => parseCli(['--fail-fast-timeout', '5000'], {})).toThrow('--fail-fast-timeout applies only with --fail-fast');
    expect(() => parseCli(['--fail-fast', '--fail-fast-timeout', '0'], {})).toThrow(
      '--fail-fast-timeout must be a whole number of at least 1, got "0"',
    );
  });

  it('explains bad usage', () => {
    expect(() => parseCli(['--port', 'x'], {})).toThrow(UsageError);
    expect(() => parseCli(['--nope'], {})).toThrow(/^unknown option --nope\nOptions: --upstream/);
    expect(() => parseCli(['node', 'server.js'], {})).toThrow(/Did you mean --upstream "node server.js"/);
    expect(() => parseCli(['valdate', '--config', 'a.yaml'], {})).toThrow(/Did you mean the command validate\?/);
  });

  it('suggests the closest flag of the command for a typo, and only when it is close', () => {
    expect(message(['--upstrem', 'node s.js'])).toMatch(/^unknown option --upstrem \(did you mean --upstream\?\)\n/);
    expect(message(['--prot', '80'])).toContain('(did you mean --port?)');
    expect(message(['validate', '--fail-fats'])).toContain('(did you mean --fail-fast?)');
    expect(message(['explain', '--featurs', 'agent'])).toContain('(did you mean --features?)');
    expect(message(['--bogus'])).not.toContain('did you mean');
    expect(message(['--metod', 'tools/call'])).not.toContain('did you mean'); // close only to an option serving does not take
  });

  it("lists only the options of the command being run, and refuses another command's options", () => {
    const options = /\nOptions: (.*)\n/.exec(message(['--bogus']))![1].split(', ');
    expect(options).toEqual(expect.arrayContaining(['--upstream', '--host', '--fail-fast', '--fail-fast-timeout', '--config', '--help']));
    for (const flag of ['--method', '--name', '--input', '--principal']) expect(options).not.toContain(flag);
    expect(() => parseCli(['explain', '--bogus'], {})).toThrow(
      /\nOptions of explain: --config, --features, --method, --name, --input, --principal, --path, --client-name, --features-header, --help, --version\n/,
    );
    expect(() => parseCli(['--method', 'tools/call'], {})).toThrow(
      /^--method is not an option of serving; it belongs to explain\nOptions: --upstream/,
    );
    expect(() => parseCli(['explain', '--upstream', 'x'], {})).toThrow(
      /^--upstream is not an option of explain; it belongs to serving and validate\n/,
    );
    expect(() => parseCli(['schema', '--config', 'a.yaml'], {})).toThrow(
      /it belongs to serving, validate, explain and pins\nOptions of schema: --help, --version\n/,
    );
    // validate takes serving's options: it checks the start that command line would make.
    expect(parseCli(['validate', '--host', '0.0.0.0', '--allow-unauthenticated'], {}).overrides).toMatchObject({
      listen: { host: '0.0.0.0' },
      auth: { allowUnauthenticated: true },
    });
  });

  it('--features and MCP_PROXY_FEATURES give every client tags (the default profile); a malformed tag is a usage error', () => {
    expect(parseCli(['--stdio', '--features', 'agent, format=json'], {}).overrides.profiles).toEqual({
      default: { features: ['agent', 'format=json'] },
    });
    expect(parseCli([], { MCP_PROXY_FEATURES: 'human' }).overrides.profiles).toEqual({ default: { features: ['human'] } });
    expect(parseCli(['--features', 'agent'], { MCP_PROXY_FEATURES: 'human' }).overrides.profiles).toEqual({
      default: { features: ['agent'] },
    });
    expect(parseCli([], {}).overrides.profiles).toBeUndefined();
    expect(() => parseCli(['--features', 'agent,Format=JSON'], {})).toThrow(
      /^--features \(MCP_PROXY_FEATURES\): "Format=JSON": does not match/,
    );
    // explain's --features are what the client declares; the variable still sets the default profile.
    const explained = parseCli(['explain', '--features', 'format=text', '--principal', 'token:ci', '--features-header', 'agent'], {
      MCP_PROXY_FEATURES: 'verbosity=compact',
    });
    expect(explained.explain).toMatchObject({ features: ['format=text'], arrival: { principal: 'token:ci', featuresHeader: 'agent' } });
    expect(explained.overrides.profiles).toEqual({ default: { features: ['verbosity=compact'] } });
  });
});
