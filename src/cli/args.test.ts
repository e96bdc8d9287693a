import { describe, expect, it } from 'vitest';
import { UsageError } from '../jsonrpc/errors.js';
import { parseCli } from './args.js';

describe('parseCli', () => {
  it('maps flags to config overrides', () => {
    const r = parseCli(['--upstream', 'node server.js', '--port', '9000', '--stdio', '--request-timeout', '500'], {});
    expect(r.command).toBe('serve');
    expect(r.overrides).toMatchObject({ upstream: { command: 'node server.js' }, listen: { transport: 'stdio', port: 9000 }, timeouts: { requestMs: 500 } });
  });

  it('passes --env NAME=VALUE and --env NAME (the proxy\'s own value) to a stdio upstream, and refuses what it cannot pass', () => {
    const r = parseCli(['--env', 'A=1=2', '--env', 'TOKEN'], { TOKEN: 'secret' });
    expect(r.overrides.upstream).toEqual({ env: { A: '1=2', TOKEN: 'secret' } });
    expect(() => parseCli(['--env', 'MISSING'], {})).toThrow(/no variable MISSING/);
    expect(() => parseCli(['--env', '=x'], {})).toThrow(/NAME or NAME=VALUE/);
  });

  it('treats http(s) URLs as HTTP upstreams', () => {
    expect(parseCli(['--upstream', 'HTTPS://example.test/mcp'], {}).overrides.upstream).toMatchObject({ url: 'HTTPS://example.test/mcp' });
  });

  it('reads MCP_PROXY_* variables, with flags winning', () => {
    const env = { MCP_PROXY_UPSTREAM: 'http://127.0.0.1:1/mcp', MCP_PROXY_PORT: '7000', MCP_PROXY_STDIO: 'true', MCP_PROXY_CONFIG: 'x.yaml', MCP_PROXY_LOG_LEVEL: 'debug', MCP_PROXY_STATE_SECRET: 'a-long-shared-secret' };
    const r = parseCli(['--port', '7001'], env);
    expect(r.configFile).toBe('x.yaml');
    expect(r.overrides).toMatchObject({ upstream: { url: 'http://127.0.0.1:1/mcp' }, listen: { port: 7001, transport: 'stdio' }, logLevel: 'debug', modern: { stateSecret: 'a-long-shared-secret' } });
  });

  it('recognises subcommands, help and version', () => {
    expect(parseCli(['validate', '--config', 'a.yaml'], {})).toMatchObject({ command: 'validate', configFile: 'a.yaml' });
    expect(parseCli(['schema'], {}).command).toBe('schema');
    expect(parseCli(['-h'], {}).command).toBe('help');
    expect(parseCli(['--version'], {}).command).toBe('version');
  });

  it('gives --fail-fast its own time limit: 30 s unless --fail-fast-timeout or MCP_PROXY_FAIL_FAST_TIMEOUT says otherwise', () => {
    expect(parseCli(['--fail-fast'], {})).toMatchObject({ failFast: true, failFastTimeoutMs: 30_000 });
    expect(parseCli(['--fail-fast', '--fail-fast-timeout', '5000'], { MCP_PROXY_FAIL_FAST_TIMEOUT: '9000' }).failFastTimeoutMs).toBe(5000);
    expect(parseCli([], { MCP_PROXY_FAIL_FAST: '1', MCP_PROXY_FAIL_FAST_TIMEOUT: '9000' }).failFastTimeoutMs).toBe(9000);
    expect(() => parseCli(['--fail-fast-timeout', '5000'], {})).toThrow('--fail-fast-timeout applies only with --fail-fast');
    expect(() => parseCli(['--fail-fast', '--fail-fast-timeout', '0'], {})).toThrow('--fail-fast-timeout must be a whole number of at least 1, got "0"');
  });

  it('explains bad usage', () => {
    expect(() => parseCli(['--port', 'x'], {})).toThrow(UsageError);
    expect(() => parseCli(['--nope'], {})).toThrow(/unknown option --nope\nOptions: --upstream/);
    expect(() => parseCli(['node', 'server.js'], {})).toThrow(/Did you mean --upstream "node server.js"/);
  });
});
