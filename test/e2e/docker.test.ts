/**
 * No Docker engine runs here, so this runs what the Dockerfile and docker-compose.yml would:
 * the image's ENTRYPOINT with the compose service's environment and mounted config, in front of
 * server-everything, then the image's HEALTHCHECK command against it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startEverythingHttp, startProxy, stopAll } from '../helpers/processes.js';

const dockerfile = readFileSync(`${ROOT}Dockerfile`, 'utf8').replace(/\\\n\s*/g, '');
const compose = parse(readFileSync(`${ROOT}docker-compose.yml`, 'utf8'));

/** The JSON-array form of a Dockerfile instruction, e.g. ENTRYPOINT or HEALTHCHECK … CMD. */
function execForm(pattern: RegExp): string[] {
  const m = dockerfile.match(pattern);
  if (!m) throw new Error(`Dockerfile has no ${pattern}`);
  return JSON.parse(m[1]);
}

describe('Dockerfile and docker-compose.yml, run without Docker', () => {
  afterAll(stopAll);

  it('builds a non-root, multi-stage image whose entry point is the CLI', () => {
    expect(dockerfile.match(/^FROM /gm)?.length).toBe(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(execForm(/^ENTRYPOINT (\[.*\])$/m)).toEqual(['node', 'dist/main.js']);
    // The compose proxy mounts the examples folder where its config variable points.
    const proxy = compose.services.proxy;
    expect(proxy.volumes).toContain('./config/examples:/config:ro');
    expect(proxy.environment.MCP_PROXY_CONFIG).toBe('/config/everything.yaml');
    expect(compose.services.everything.command.at(-1)).toBe('streamableHttp');
    // The image binds 0.0.0.0, so it starts only with authentication or an explicit opt-out; the
    // opt-out goes with a port published on loopback only.
    expect(dockerfile).toMatch(/MCP_PROXY_HOST=0\.0\.0\.0/);
    expect(proxy.environment.MCP_PROXY_ALLOW_UNAUTHENTICATED).toBe('1');
    expect(proxy.ports).toEqual(['127.0.0.1:8080:8080']);
    // The replicas believe X-Forwarded-For only from the balancer's fixed address.
    const { balancer, 'proxy-scaled': scaled } = compose.services;
    expect(scaled.environment.BALANCER_ADDRESS).toBe(balancer.networks.default.ipv4_address);
    expect(parse(readFileSync(`${ROOT}config/examples/everything-replicas.yaml`, 'utf8')).listen.trustProxy).toEqual(['${BALANCER_ADDRESS:-127.0.0.1}']);
  });

  it('serves server-everything through the compose configuration and passes the HEALTHCHECK', async () => {
    const everything = await startEverythingHttp();
    const env = {
      ...compose.services.proxy.environment,
      MCP_PROXY_CONFIG: compose.services.proxy.environment.MCP_PROXY_CONFIG.replace('/config/', `${ROOT}config/examples/`),
      UPSTREAM_URL: everything.url,
      MCP_PROXY_HOST: '127.0.0.1', // the image binds 0.0.0.0 inside its own network namespace
    };
    const [, ...entryArgs] = execForm(/^ENTRYPOINT (\[.*\])$/m);
    const proxy = await startProxy(entryArgs.slice(1), env); // startProxy runs dist/main.js itself
    const client = new Client({ name: 'compose-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
    await client.close();

    const [cmd, ...args] = execForm(/HEALTHCHECK .*?CMD (\[.*\])$/m);
    const port = new URL(proxy.url).port;
    const check = await promisify(execFile)(cmd === 'node' ? process.execPath : cmd, args, { env: { ...process.env, MCP_PROXY_PORT: port } });
    expect(check.stderr).toBe('');
  });
});
