/**
 * Content negotiation as an operator configures it: `validate` and `explain` on good and broken
 * configs, a plugin loaded from the config (and a broken one refused at start-up), and an
 * upstream that speaks the extension itself (passed through, never transformed twice).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { callTool, INIT, rawPost } from '../helpers/raw.js';
import { commandLine, eventually, fixtureArgv, logged, PROXY_MAIN, ROOT, startProxy, stopAll } from '../helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'negotiation-config-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const cli = async (args: string[]) => {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PROXY_MAIN, ...args], { timeout: 15_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
};
const EXAMPLE = `${ROOT}config/examples/negotiation.yaml`;
const negotiating = (features: string[]) => ({
  ...INIT,
  params: { ...INIT.params, capabilities: { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features } } } },
});

/** A proxy in front of the faulty fixture whose one rule applies `transformer` (from `plugin`) for clients tagged `tag`. */
async function echoThroughPlugin(name: string, plugin: string, transformer: string, tag: string, text: string) {
  const config = file(
    `${name}.yaml`,
    [
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}`,
      'contentNegotiation:',
      `  plugins: [${JSON.stringify(plugin)}]`,
      '  rules:',
      `    - when: { features: [${tag}] }`,
      `      apply: [{ ${transformer}: {} }]`,
    ].join('\n'),
  );
  const proxy = await startProxy(['--config', config]);
  const init = await rawPost(proxy.url, negotiating([tag]));
  const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  const reply = await rawPost(proxy.url, callTool(1, 'echo', { text }), headers);
  return { proxy, text: reply.messages[0].result.content[0].text as string };
}

describe('negotiation config, explain and plugins', () => {
  afterAll(stopAll);

  it('validate accepts the example and names every problem in a broken rule set', async () => {
    expect(await cli(['validate', '--config', EXAMPLE])).toMatchObject({
      code: 0,
      stdout: `${EXAMPLE}: OK (11 content-negotiation rules)\n`,
    });
    const broken = file(
      'broken.yaml',
      [
        'contentNegotiation:',
        '  rules:',
        '    - when: { features: ["format==json"], method: tools/nope }',
        '      apply: [{ markdown: { colour: red } }, { nope: {} }]',
      ].join('\n'),
    );
    const r = await cli(['validate', '--config', broken]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${broken}:3:51: contentNegotiation.rules.0.when.method: must be one of tools/call, resources/read`);
    const fixed = file(
      'half.yaml',
      'contentNegotiation:\n  rules:\n    - when: { features: ["format==json"] }\n      apply: [{ markdown: { colour: red } }, { nope: {} }]\n',
    );
    const r2 = await cli(['validate', '--config', fixed]);
    expect(r2.stderr).toContain('contentNegotiation.rules[0].when.features[0]: "format==json" does not match');
    expect(r2.stderr).toContain('contentNegotiation.rules[0].apply[0].markdown: Unrecognized key: "colour"');
    expect(r2.stderr).toContain('contentNegotiation.rules[0].apply[1]: unknown transformer "nope"');
  });

  it('explain shows the matching rules in order and the output, offline', async () => {
    const input = file(
      'result.json',
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        result: { content: [{ type: 'text', text: 'Temperature: 8\nHumidity: 72\nMail ada@example.org' }] },
      }),
    );
    const r = await cli([
      'explain',
      '--config',
      EXAMPLE,
      '--features',
      'agent,format=json,x-redact',
      '--name',
      'get_weather',
      '--input',
      input,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /✔ weather as bare JSON for agents: json-extract\n {2}✔ no e-mail addresses for x-redact clients: redact\n {2}· compact journey plans: trim/,
    );
    expect(r.stdout).toContain('applied: weather as bare JSON for agents › json-extract');
    expect(r.stdout).toContain('"temperature": 8');
    const none = await cli(['explain', '--features', '', '--method', 'resources/read']);
    expect(none.stdout).toContain('applied: nothing (the client gets the upstream result unchanged)');
  });

  it('explain says why a file read is left alone, and warns about tags no rule acts on', async () => {
    const input = file('file.json', JSON.stringify({ content: [{ type: 'text', text: '# Notes\n\n**keep** this' }] }));
    const r = await cli(['explain', '--features', 'format=text,format=yaml', '--name', 'read_text_file', '--input', input]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'warning: no rule acts on format=yaml ("yaml" is not a registered value of format (json, text, markdown)); results are not shaped for it',
    );
    expect(r.stdout).toContain('✔ file contents: verbatim (exact contents, never reshaped)');
    expect(r.stdout).toContain('left alone: rule "file contents" marks it as exact contents, so its text reaches the client exactly');
    expect(r.stdout).toContain('"text": "# Notes\\n\\n**keep** this"');
  });

  it('runs a plugin transformer from the config, and refuses a broken plugin at start-up', async () => {
    const redacted = await echoThroughPlugin(
      'plugin',
      `${ROOT}examples/plugins/redact.mjs`,
      'redact',
      'x-redact',
      'write to ada@example.org',
    );
    expect(redacted.text).toBe('write to [redacted]');

    const bad = file('bad-plugin.mjs', 'throw new Error("plugin exploded");\n');
    const empty = file('empty-plugin.mjs', 'export const notATransformer = 1;\n');
    for (const [plugin, message] of [
      [bad, 'plugin exploded'],
      [empty, 'exports no transformer'],
      [join(dir, 'missing.mjs'), 'cannot load plugin'],
    ]) {
      const r = await cli(['validate', '--config', file('p.yaml', `contentNegotiation:\n  plugins: [${JSON.stringify(plugin)}]\n`)]);
      expect(r.code, plugin).toBe(2);
      expect(r.stderr).toContain('contentNegotiation.plugins[0]');
      expect(r.stderr).toContain(message);
    }
  });

  it('fails open when a transformer throws, and counts it in /metrics', async () => {
    const plugin = file(
      'explode.mjs',
      [
        '// Lives outside the project, where zod cannot be imported: any object with a zod-style safeParse will do.',
        'const options = { safeParse: (v) => ({ success: true, data: v ?? {} }) };',
        "export const explode = { name: 'explode', description: 'throws', options, create: () => () => { throw new Error('kaboom'); } };",
      ].join('\n'),
    );
    const { proxy, text } = await echoThroughPlugin('explode', plugin, 'explode', 'x-explode', 'unharmed');
    expect(text).toBe('unharmed');
    // The start-up check's own process is gone once it has logged.
    await logged(proxy, (e) => e.msg === 'upstream ready', 10_000, 'the start-up check');
    const metrics = await (await fetch(proxy.url.replace('/mcp', '/metrics'))).text();
    expect(metrics).toContain('mcp_proxy_transform_failures_total 1\n');
    expect(metrics).toContain('mcp_proxy_sessions_started_total 1\n');
    expect(metrics).toContain('mcp_proxy_requests_total 2\n');
    expect(metrics).toMatch(/mcp_proxy_upstream_processes 1\n/);
    await eventually(() => proxy.stderr().includes('kaboom'), 5000, 'the warning in the log');
  });

  it('passes an upstream that speaks the extension itself straight through', async () => {
    const proxy = await startProxy(['--upstream', commandLine([process.execPath, `${ROOT}test/fixtures/native-negotiation-server.mjs`])]);
    const init = await rawPost(proxy.url, negotiating(['agent', 'format=json']), { accept: 'application/json' });
    expect(init.messages[0].result.capabilities.extensions).toEqual({ 'io.modelcontextprotocol/content-negotiation': { native: true } });
    expect(init.messages[0].result.instructions).toBeUndefined();
    const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const reply = await rawPost(proxy.url, callTool(1, 'get_weather'), headers);
    expect(reply.messages[0].result).toEqual({ content: [{ type: 'text', text: 'Temperature: 8\nHumidity: 72' }] });
  });
});
