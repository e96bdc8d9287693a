/**
 * Pinned tool definitions through the built proxy, with a server whose `weather` tool changes its
 * description silently after a call to `mutate` (test/fixtures/tool-pins-server.ts): with
 * `upstream.toolChanges: refuse` the changed tool is refused to a v1 SDK client (a session of its
 * own, shared sessions, the bridge) and a 2026-07-28 client, in front of a legacy and a
 * 2026-07-28 server, until the operator accepts it with `pins accept` and a reload; with
 * `announce` legacy sessions are told; by default the change is logged and counted.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connectModern } from '../helpers/modern-clients.js';
import { eventually, fixtureArgv, logEntries, logged, PROXY_MAIN, startProxy, stopAll, type Running } from '../helpers/processes.js';

const REFUSED = /Tool "weather" is refused: its definition changed since it was pinned .*pins accept "weather"/;
type Text = { content: Array<{ type: string; text: string }> };

const dirs: string[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  await stopAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(stopAll);

/** A proxy in front of the fixture (its state in a file of a fresh folder), with `upstream` config beside. */
async function proxyWith(upstream: Record<string, unknown>, fixtureArgs: string[] = [], args: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'tool-pins-e2e-'));
  dirs.push(dir);
  const config = join(dir, 'proxy.yaml');
  const command = fixtureArgv('tool-pins-server', '--state', join(dir, 'state'), ...fixtureArgs);
  writeFileSync(config, JSON.stringify({ upstream: { command, ...upstream } }));
  const proxy = await startProxy(['--config', config, ...args]);
  return { proxy, config, pins: join(dir, 'pins.json') };
}

async function legacyClient(proxy: Running): Promise<Client> {
  const client = new Client({ name: 'tool-pins-v1', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(proxy.url));
  await client.connect(transport);
  closers.push(async () => {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  });
  return client;
}

async function modernClient(proxy: Running) {
  const modern = await connectModern('http', { url: proxy.url }, { input: false });
  closers.push(() => modern.close());
  return modern.client;
}

const names = (listed: { tools: Array<{ name: string }> }) => listed.tools.map((t) => t.name).sort();
const weatherText = async (client: { callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown> }) =>
  ((await client.callTool({ name: 'weather', arguments: { city: 'Bern' } })) as Text).content[0].text;

/** `pins accept weather` on the proxy's config, then a reload (SIGHUP), as an operator does once `pins list` shows the refusal. */
async function accept(proxy: Running, config: string): Promise<string> {
  // The proxy writes its pins at most once a second.
  const listed = () => execFileSync(process.execPath, [PROXY_MAIN, 'pins', 'list', '--config', config], { encoding: 'utf8' });
  await eventually(() => /^weather .* refused: /m.test(listed()), 5000, 'the refusal in the pins file');
  const out = execFileSync(process.execPath, [PROXY_MAIN, 'pins', 'accept', 'weather', '--config', config], { encoding: 'utf8' });
  const reloads = logEntries(proxy).filter((e) => String(e.msg).startsWith('config reloaded')).length;
  proxy.proc.kill('SIGHUP');
  await eventually(() => logEntries(proxy).filter((e) => String(e.msg).startsWith('config reloaded')).length > reloads, 5000, 'reload');
  return out;
}

describe('upstream.toolChanges: refuse', () => {
  for (const sessions of ['isolated', 'shared'] as const) {
    it(`in front of a legacy server (${sessions} sessions): the changed tool is refused to v1 and 2026-07-28 clients, and unlisted, until accepted`, async () => {
      // No list cache: it would answer the listing after the server's silent change as before it, for up to maxAgeMs.
      const listCache = { maxAgeMs: 0 };
      const { proxy, config } = await proxyWith({ toolPins: 'pins.json', toolChanges: 'refuse', sessions, listCache });
      const v1 = await legacyClient(proxy);
      const modern = await modernClient(proxy);
      expect(names(await v1.listTools())).toEqual(['mutate', 'weather']);
      expect(await weatherText(v1)).toBe('sunny in Bern (definition v1)');
      expect(await weatherText(modern)).toBe('sunny in Bern (definition v1)');

      await v1.callTool({ name: 'mutate', arguments: {} });
      // The listing that shows the change: the tool is left out of it, then refused everywhere.
      expect(names(await v1.listTools())).toEqual(['mutate']);
      await expect(weatherText(v1)).rejects.toThrow(REFUSED);
      await expect(weatherText(modern)).rejects.toThrow(REFUSED);
      expect(names(await modern.listTools())).toEqual(['mutate']);
      expect(logEntries(proxy)).toContainEqual(
        expect.objectContaining({
          level: 40,
          tool: 'weather',
          mode: 'refuse',
          msg: 'tool definition changed: calls refused until accepted',
        }),
      );

      expect(await accept(proxy, config)).toMatch(/accepted weather: [0-9a-f]{12} → [0-9a-f]{12}/);
      expect(await weatherText(v1)).toBe('sunny in Bern (definition v2)');
      expect(await weatherText(modern)).toBe('sunny in Bern (definition v2)');
      expect(names(await v1.listTools())).toEqual(['mutate', 'weather']);
    });
  }

  it('in front of a 2026-07-28 server: refused to a 2026-07-28 client and to a v1 client on the bridge, and both told, until accepted', async () => {
    const { proxy, config } = await proxyWith({ toolPins: 'pins.json', toolChanges: 'refuse', era: 'modern' }, ['--modern']);
    const modern = await modernClient(proxy);
    const v1 = await legacyClient(proxy);
    const heard = { modern: 0, v1: 0 };
    modern.setNotificationHandler('notifications/tools/list_changed', () => void heard.modern++);
    v1.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.v1++);
    // The server's own listen stream, passed through: the proxy's announcement joins it.
    const listening = await modern.listen({ toolsListChanged: true });
    closers.push(() => listening.close());
    expect(names(await modern.listTools())).toEqual(['mutate', 'weather']);
    expect(await weatherText(v1)).toBe('sunny in Bern (definition v1)');

    await modern.callTool({ name: 'mutate', arguments: {} });
    expect(heard).toEqual({ modern: 0, v1: 0 }); // the server says nothing
    expect(names(await modern.listTools())).toEqual(['mutate']);
    await expect(weatherText(modern)).rejects.toThrow(REFUSED);
    await expect(weatherText(v1)).rejects.toThrow(REFUSED);
    // The tool left the list: clients are told, as with announce.
    await eventually(() => heard.modern === 1 && heard.v1 === 1, 5000, 'list_changed heard by both clients');

    await accept(proxy, config);
    expect(await weatherText(modern)).toBe('sunny in Bern (definition v2)');
    expect(await weatherText(v1)).toBe('sunny in Bern (definition v2)');
  });

  it('needs a pins file, and a corrupt one stops the start with a message that names it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tool-pins-e2e-'));
    dirs.push(dir);
    const config = join(dir, 'proxy.yaml');
    writeFileSync(config, JSON.stringify({ upstream: { toolChanges: 'refuse' } }));
    const run = () => {
      try {
        execFileSync(process.execPath, [PROXY_MAIN, '--port', '0', '--config', config], { encoding: 'utf8', stdio: 'pipe' });
        return { status: 0, stderr: '' };
      } catch (err) {
        return err as { status: number; stderr: string };
      }
    };
    expect(run()).toMatchObject({ status: 2, stderr: expect.stringMatching(/toolChanges: refuse needs toolPins/) });
    writeFileSync(config, JSON.stringify({ upstream: { toolChanges: 'refuse', toolPins: 'pins.json' } }));
    writeFileSync(join(dir, 'pins.json'), '{"version": 1, "tools": {"weather": ');
    expect(run()).toMatchObject({
      status: 2,
      stderr: expect.stringMatching(/upstream\.toolPins: .*pins\.json: the tool pins file is not JSON .*fix or delete it/),
    });
  });
});

describe('the pins command', () => {
  it('pins list shows what is pinned and refused; pins reject keeps the old digest, pins accept --all takes the new one; a mistake changes nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tool-pins-e2e-'));
    dirs.push(dir);
    const config = join(dir, 'proxy.yaml');
    writeFileSync(config, JSON.stringify({ upstream: { toolPins: 'pins.json', toolChanges: 'refuse' } }));
    const [a, b, c] = ['a', 'b', 'c'].map((x) => x.repeat(64));
    const file = (tools: object) => writeFileSync(join(dir, 'pins.json'), JSON.stringify({ version: 1, tools }));
    const pins = (...args: string[]) =>
      execFileSync(process.execPath, [PROXY_MAIN, 'pins', ...args, '--config', config], { encoding: 'utf8' });
    const read = () => (JSON.parse(readFileSync(join(dir, 'pins.json'), 'utf8')) as { tools: object }).tools;
    file({ weather: { sha256: a, refused: b }, news: { sha256: a, refused: c }, maps: { sha256: c } });
    expect(pins('list')).toMatch(/3 tools pinned, 2 refused\n(.|\n)*weather {2}a{12} {2}refused: b{12}/);
    const mistake = spawnSync(process.execPath, [PROXY_MAIN, 'pins', 'accept', 'maps', '--config', config], { encoding: 'utf8' });
    expect(mistake).toMatchObject({
      status: 2,
      stderr: expect.stringMatching(/no refused definition of "maps" \(refused now: news, weather\)/),
    });
    expect(read()).toEqual({ weather: { sha256: a, refused: b }, news: { sha256: a, refused: c }, maps: { sha256: c } });
    expect(pins('reject', 'weather')).toMatch(/rejected weather's new definition b{12}: a{12} stays pinned/);
    expect(pins('accept', '--all')).toMatch(/accepted news: a{12} → c{12}\nReload the proxy/);
    expect(read()).toEqual({ maps: { sha256: c }, news: { sha256: c }, weather: { sha256: a } });
  });
});

describe('upstream.toolChanges: announce', () => {
  it('tells every legacy session, and modern listeners that asked, that the tool list changed when a listing shows a changed definition', async () => {
    const { proxy } = await proxyWith({ toolChanges: 'announce' });
    const lister = await legacyClient(proxy);
    const other = await legacyClient(proxy);
    const modern = await modernClient(proxy);
    const heard = { lister: 0, other: 0, modern: 0 };
    lister.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.lister++);
    other.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.other++);
    modern.setNotificationHandler('notifications/tools/list_changed', () => void heard.modern++);
    const listening = await modern.listen({ toolsListChanged: true });
    closers.push(() => listening.close());
    expect(listening.honoredFilter).toEqual({ toolsListChanged: true });
    await lister.listTools();
    await lister.callTool({ name: 'mutate', arguments: {} });
    expect(heard).toEqual({ lister: 0, other: 0, modern: 0 }); // the server says nothing
    const listed = await lister.listTools();
    expect(listed.tools.find((t) => t.name === 'weather')?.description).toMatch(/id_rsa/); // allowed, and announced
    await eventually(() => heard.lister === 1 && heard.other === 1 && heard.modern === 1, 5000, 'list_changed heard by every client');
    expect(await weatherText(other)).toBe('sunny in Bern (definition v2)');
  });
});

describe('upstream.toolChanges: allow (the default)', () => {
  it('logs and counts a changed definition, and serves it', async () => {
    const { proxy } = await proxyWith({});
    const v1 = await legacyClient(proxy);
    await v1.listTools();
    await v1.callTool({ name: 'mutate', arguments: {} });
    await v1.listTools();
    await logged(proxy, (e) => e.msg === 'tool definition changed: pinned anew' && e.tool === 'weather' && e.mode === 'allow');
    const metrics = await (await fetch(proxy.url.replace('/mcp', '/metrics'))).text();
    expect(metrics).toMatch(/^mcp_proxy_tool_definition_changes_total\{mode="allow"\} 1$/m);
    expect(metrics).toMatch(/^mcp_proxy_tool_pins\{state="pinned"\} 2$/m);
    expect(await weatherText(v1)).toBe('sunny in Bern (definition v2)');
  });
});
