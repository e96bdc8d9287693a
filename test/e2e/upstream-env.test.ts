/**
 * A stdio upstream gets a minimal environment: server-everything's get-env, reached through the
 * proxy, shows PATH and what upstream.env sets, never the proxy's own secrets; `inheritEnv: true`
 * passes everything on purpose.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { callTool, rawPost, rawSession } from '../helpers/raw.js';
import { commandLine, EVERYTHING_STDIO, startProxy, stopAll } from '../helpers/processes.js';

const SECRETS = { AWS_SECRET_ACCESS_KEY: 'proxy-only-aws-secret', MCP_PROXY_STATE_SECRET: 'proxy-only-state-secret-0123456789abcdef' };

/** What the proxy's environment holds besides its secrets: a shell function in a variable the minimal set would keep. */
const SHELL_FUNCTION = { TERM: '() { echo inherited; }' };

async function upstreamEnv(inheritEnv: boolean): Promise<Record<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'upstream-env-'));
  const config = join(dir, 'proxy.yaml');
  writeFileSync(
    config,
    `upstream:\n  command: ${JSON.stringify(commandLine(EVERYTHING_STDIO))}\n  inheritEnv: ${inheritEnv}\n  env:\n    GREETING: from-the-config\n`,
  );
  const proxy = await startProxy(['--config', config], { ...SECRETS, ...SHELL_FUNCTION });
  const headers = await rawSession(proxy.url);
  const reply = await rawPost(proxy.url, callTool(1, 'get-env'), headers);
  await proxy.stop();
  return JSON.parse(reply.messages.at(-1).result.content[0].text);
}

describe('the environment of a stdio upstream', () => {
  afterAll(stopAll);

  it('holds the minimal set and upstream.env, never the proxy’s secrets', async () => {
    const env = await upstreamEnv(false);
    expect(env.PATH).toBe(process.env.PATH);
    expect(env.GREETING).toBe('from-the-config');
    expect(JSON.stringify(env)).not.toContain('proxy-only');
    // The variables sudo keeps, less the shell function; nothing else of the proxy's.
    expect(Object.keys(env).filter((k) => !['HOME', 'LOGNAME', 'PATH', 'SHELL', 'USER', 'GREETING'].includes(k))).toEqual([]);
  });

  it('holds everything with inheritEnv: true', async () => {
    const env = await upstreamEnv(true);
    expect(env).toMatchObject({ ...SECRETS, GREETING: 'from-the-config' });
  });
});
