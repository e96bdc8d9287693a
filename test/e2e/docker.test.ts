/**
 * No Docker engine runs here, so this runs what the Dockerfile and docker-compose.yml would:
 * the image's ENTRYPOINT with the compose service's environment and mounted config, in front of
 * server-everything, then the image's HEALTHCHECK command against it; the `docker run` the
 * Dockerfile documents, with the image's ENV and the command's -e flags; and every file the
 * shipped configs reference, looked up in what the image copies.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { eventually, PROXY_MAIN, ROOT, startEverythingHttp, startProxy, stopAll } from '../helpers/processes.js';

const dockerfile = readFileSync(`${ROOT}Dockerfile`, 'utf8').replace(/\\\n\s*/g, '');
const compose = parse(readFileSync(`${ROOT}docker-compose.yml`, 'utf8'));
/** The image's own stage: the last FROM and what follows. */
const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));

/** The JSON-array form of a Dockerfile instruction, e.g. ENTRYPOINT or HEALTHCHECK … CMD. */
function execForm(pattern: RegExp): string[] {
  const m = dockerfile.match(pattern);
  if (!m) throw new Error(`Dockerfile has no ${pattern}`);
  return JSON.parse(m[1]);
}

/** The image's ENV (NAME=value pairs; no quoting is used). */
function imageEnv(): Record<string, string> {
  const line = /^ENV (.*)$/m.exec(finalStage)?.[1] ?? '';
  return Object.fromEntries(
    line
      .split(/\s+/)
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
}

/** What the image copies from the build context: image path → context path. */
function copiedFromContext(): Array<{ image: string; context: string }> {
  const workdir = /^WORKDIR (\S+)$/m.exec(finalStage)![1];
  return [...finalStage.matchAll(/^COPY (.*)$/gm)]
    .map((m) => m[1].split(/\s+/).filter((w) => !w.startsWith('--chown')))
    .filter((words) => !words.some((w) => w.startsWith('--from')))
    .flatMap((words) => {
      const dest = posix.resolve(workdir, words.at(-1)!);
      const sources = words.slice(0, -1);
      const intoFolder = sources.length > 1 || words.at(-1)!.endsWith('/');
      return sources.map((src) => ({ image: intoFolder ? posix.join(dest, posix.basename(src)) : dest, context: src }));
    });
}

/** The build-context file an image path comes from, if the image has it. */
function contextPathOf(imagePath: string, copies = copiedFromContext()): string | undefined {
  const copy = copies.find((c) => imagePath === c.image || imagePath.startsWith(`${c.image}/`));
  return copy && posix.join(copy.context, imagePath.slice(copy.image.length));
}

/** The build and run commands the Dockerfile's header documents. */
function documented(): { build: string; run: string } {
  const commands = dockerfile
    .split('\n')
    .filter((l) => /^#\s+docker (build|run) /.test(l))
    .map((l) => l.replace(/^#\s+/, ''));
  const [build, run] = ['docker build ', 'docker run '].map((start) => commands.find((c) => c.startsWith(start)));
  if (!build || !run) throw new Error("the Dockerfile's header documents no `docker build` and `docker run` commands");
  return { build, run };
}

function yamlFiles(dir: string): string[] {
  return readdirSync(`${ROOT}${dir}`, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(`${dir}/${e.name}`) : e.name.endsWith('.yaml') ? [`${dir}/${e.name}`] : [],
  );
}

/** Runs the CLI with exactly `env` (and PATH), as a container would; resolves with its exit code and output. */
async function inContainerEnv(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PROXY_MAIN, ...args], {
      env: { PATH: process.env.PATH, ...env },
      timeout: 20_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * A compose service's environment as its process would see it, its paths moved to where this
 * machine has what the container mounts there: a bind mount (`./docs:/srv/docs`) at that folder
 * of the repository, a named volume at `volumes[name]`.
 */
function mountedEnv(service: any, volumes: Record<string, string>): Record<string, string> {
  const mounts = (service.volumes as string[]).map((v) => {
    const [source, target] = v.split(':');
    return { target, host: source.startsWith('./') ? posix.join(ROOT, source) : volumes[source] };
  });
  return Object.fromEntries(
    Object.entries(service.environment as Record<string, string>).map(([name, value]) => {
      const mount = mounts.find((m) => value === m.target || value.startsWith(`${m.target}/`));
      return [name, mount ? posix.join(mount.host, value.slice(mount.target.length)) : value];
    }),
  );
}

/** The packages an `npm install` command line installs, by name: their pinned versions. */
function pinnedPackages(command: string[]): Record<string, string> {
  return Object.fromEntries(
    command
      .filter((w) => /^@?[^@\s-][^@\s]*@\d/.test(w))
      .map((w) => {
        const at = w.lastIndexOf('@');
        return [w.slice(0, at), w.slice(at + 1)];
      }),
  );
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
    expect(parse(readFileSync(`${ROOT}config/examples/everything-replicas.yaml`, 'utf8')).listen.trustProxy).toEqual([
      '${BALANCER_ADDRESS:-127.0.0.1}',
    ]);
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
    const check = await promisify(execFile)(cmd === 'node' ? process.execPath : cmd, args, {
      env: { ...process.env, MCP_PROXY_PORT: port },
    });
    expect(check.stderr).toBe('');
  });

  it('serves several servers through the compose profile "several", with per-server health', async () => {
    const { 'proxy-several': service, 'mcp-servers': installer } = compose.services;
    expect(service.profiles).toEqual(['several']);
    expect(installer.profiles).toEqual(['several']);
    expect(service.depends_on).toEqual({
      everything: { condition: 'service_healthy' },
      'mcp-servers': { condition: 'service_completed_successfully' },
    });
    expect(service.ports).toEqual(['127.0.0.1:8081:8080']);
    expect(service.environment.MCP_PROXY_ALLOW_UNAUTHENTICATED).toBe('1');
    expect(Object.keys(compose.volumes)).toEqual(['mcp-servers']);
    // The installer fills the volume the proxy reads; it installs the releases this repository tests with.
    expect(installer.volumes).toEqual([`mcp-servers:${installer.working_dir}`]);
    expect(service.volumes).toContain(`mcp-servers:${installer.working_dir}:ro`);
    const pinned = pinnedPackages(installer.command);
    expect(Object.keys(pinned).sort()).toEqual(['@modelcontextprotocol/server-filesystem', '@modelcontextprotocol/server-memory']);
    for (const [name, version] of Object.entries(pinned))
      expect(JSON.parse(readFileSync(`${ROOT}node_modules/${name}/package.json`, 'utf8')).version, name).toBe(version);

    // The volume here: the repository's own node_modules holds the same packages (npm install puts them in node_modules).
    const env = mountedEnv(service, { 'mcp-servers': ROOT.replace(/\/$/, '') });
    expect(env.MCP_PROXY_CONFIG).toBe(`${ROOT}config/examples/several-servers.yaml`);
    expect(env.MCP_SERVERS).toBe(`${ROOT}node_modules`);
    expect(env.FILES_ROOT).toBe(`${ROOT}docs`);
    const everything = await startEverythingHttp();
    const data = mkdtempSync(join(tmpdir(), 'compose-several-'));
    try {
      const proxy = await startProxy([], {
        ...env,
        UPSTREAM_URL: everything.url,
        MEMORY_FILE_PATH: join(data, 'memory.jsonl'), // the container's own /tmp
        MCP_PROXY_HOST: '127.0.0.1', // the image binds 0.0.0.0 inside its own network namespace
      });
      const base = new URL(proxy.url).origin;
      const client = new Client({ name: 'compose-several-test', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['everything_echo', 'memory_read_graph', 'files_list_allowed_directories']));
      expect(await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } })).toMatchObject({
        content: [{ type: 'text', text: 'Echo: hi' }],
      });
      expect(await client.callTool({ name: 'memory_read_graph', arguments: {} })).toMatchObject({
        structuredContent: { entities: [], relations: [] },
      });
      const allowed = await client.callTool({ name: 'files_list_allowed_directories', arguments: {} });
      expect(JSON.stringify(allowed.content)).toContain(`${ROOT}docs`);
      // The config's variant spans the servers: reading tools of each, nothing that writes.
      const readonly = await client.listTools({ _meta: { 'io.modelcontextprotocol/server-variant': 'readonly' } });
      const names = readonly.tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['everything_echo', 'memory_read_graph', 'files_read_text_file']));
      expect(names.filter((n) => /write|create|delete|edit|move/.test(n))).toEqual([]);
      await client.close();

      // Ready, each server up in /healthz, and the image's HEALTHCHECK passes.
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const health = await (await fetch(`${base}/healthz`)).json();
      expect(health.upstream.servers.map((s: any) => [s.name, s.status, s.required])).toEqual([
        ['everything', 'up', true],
        ['memory', 'up', true],
        ['files', 'up', false],
      ]);
      const [cmd, ...args] = execForm(/HEALTHCHECK .*?CMD (\[.*\])$/m);
      const check = await promisify(execFile)(cmd === 'node' ? process.execPath : cmd, args, {
        env: { ...process.env, MCP_PROXY_PORT: new URL(proxy.url).port },
      });
      expect(check.stderr).toBe('');

      // The HTTP server stops: the endpoint is not ready, naming it; the stdio servers still answer.
      await everything.stop();
      const after = new Client({ name: 'compose-several-test', version: '1' });
      await after.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
      await expect(after.callTool({ name: 'everything_echo', arguments: { message: 'hi' } })).rejects.toThrow(/Server "everything"/);
      expect(await after.callTool({ name: 'memory_read_graph', arguments: {} })).toMatchObject({ structuredContent: { entities: [] } });
      await after.close();
      await eventually(
        async () => {
          const ready = await fetch(`${base}/readyz`);
          return ready.status === 503 && ((await ready.json()) as { cause?: string }).cause?.includes('server "everything"') === true;
        },
        15_000,
        '/readyz 503 naming server "everything"',
      );
      expect(await proxy.stop('SIGTERM')).toBe(0);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  it('validates each compose service’s configuration in the image’s environment (0.0.0.0 included)', async () => {
    for (const name of ['proxy', 'proxy-scaled', 'proxy-several']) {
      const service = compose.services[name];
      const env = { ...imageEnv(), ...service.environment, MCP_PROXY_SECRET: 'a-shared-secret-of-at-least-32-characters' };
      env.MCP_PROXY_CONFIG = env.MCP_PROXY_CONFIG.replace('/config/', `${ROOT}config/examples/`); // the mounted folder
      const r = await inContainerEnv(['validate'], env);
      expect(r, name).toMatchObject({ code: 0, stderr: '' });
    }
  });

  it('ships every file the shipped configs reference, and the packages those files import', () => {
    const copies = copiedFromContext();
    const ignored = readFileSync(`${ROOT}.dockerignore`, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    const dependencies = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).dependencies; // the image prunes the rest
    const referenced: string[] = [];
    for (const file of yamlFiles('config')) {
      const inImage = copies.find((c) => c.context === 'config')!.image + file.slice('config'.length);
      const plugins: string[] = parse(readFileSync(`${ROOT}${file}`, 'utf8'))?.contentNegotiation?.plugins ?? [];
      for (const plugin of plugins) {
        const source = contextPathOf(posix.resolve(posix.dirname(inImage), plugin), copies);
        expect(source, `${file}: ${plugin} is not in the image`).toBeDefined();
        expect(existsSync(`${ROOT}${source}`), `${file}: ${plugin}`).toBe(true);
        expect(ignored, `${file}: ${plugin} is in .dockerignore`).not.toContain(source!.split('/')[0]);
        for (const [, spec] of readFileSync(`${ROOT}${source}`, 'utf8').matchAll(/\bfrom\s+['"]([^./'"][^'"]*)['"]/g)) {
          if (spec.startsWith('node:')) continue;
          const name = spec
            .split('/')
            .slice(0, spec.startsWith('@') ? 2 : 1)
            .join('/');
          expect(dependencies, `${source} imports ${name}`).toHaveProperty([name]);
        }
        referenced.push(source!);
      }
    }
    expect(referenced).toContain('examples/plugins/redact.mjs');
  });

  it('serves with the documented docker run, and refuses to without its opt-out', async () => {
    const { build, run } = documented();
    const tag = /-t (\S+)/.exec(build)![1];
    expect(build).toBe(`docker build -t ${tag} .`);
    expect(run.split(/\s+/).at(-1)).toBe(tag);
    const env = imageEnv();
    // Unauthenticated only next to a port published on loopback.
    expect(run).toContain(`-p 127.0.0.1:8080:${env.MCP_PROXY_PORT}`);
    const flags = Object.fromEntries([...run.matchAll(/\s-e\s+([A-Z_]+)=(\S*)/g)].map((m) => [m[1], m[2]]));
    expect(flags).toEqual({ MCP_PROXY_ALLOW_UNAUTHENTICATED: '1' });
    // The README and the deployment docs show these very commands.
    for (const doc of ['README.md', 'docs/deployment.md']) {
      const lines = readFileSync(`${ROOT}${doc}`, 'utf8').split('\n');
      expect(lines, doc).toContain(build);
      expect(lines, doc).toContain(run);
    }
    const [, ...entryArgs] = execForm(/^ENTRYPOINT (\[.*\])$/m);
    const [, ...cliArgs] = entryArgs; // dist/main.js: PROXY_MAIN here

    // What the container would check at start, with its own 0.0.0.0: refused without the opt-out.
    expect(env.MCP_PROXY_HOST).toBe('0.0.0.0');
    const bare = await inContainerEnv([...cliArgs, 'validate'], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(
      'listen.host (from the command line or environment): 0.0.0.0 is reachable from other machines, and no authentication is configured',
    );
    expect(await inContainerEnv([...cliArgs, 'validate'], { ...env, ...flags })).toMatchObject({
      code: 0,
      stdout: '(defaults): OK (8 content-negotiation rules)\n',
    });

    // And it serves: the demo server behind it (here on loopback, any port).
    const proxy = await startProxy(cliArgs, { ...env, ...flags, MCP_PROXY_HOST: '127.0.0.1', MCP_PROXY_PORT: '0' });
    const client = new Client({ name: 'docker-run-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('get_weather');
    await client.close();
  });
});
