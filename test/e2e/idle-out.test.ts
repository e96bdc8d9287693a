/**
 * Idle sessions end sooner when their client never opened a GET stream
 * (timeouts.sessionIdleNoStreamMs): scripts that exit without DELETE leave exactly these. A
 * session whose client listens, or listened, keeps timeouts.sessionIdleMs.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandLine, eventually, fixtureArgv, logged, startProxy, stopAll } from '../helpers/processes.js';
import { callTool, metricValue, openGetStream, rawPost, rawSession } from '../helpers/raw.js';

const FAULTY = commandLine(fixtureArgv('faulty-server'));

describe('timeouts.sessionIdleNoStreamMs', () => {
  afterAll(stopAll);

  it('ends an idle session that never opened a GET stream after it, and keeps those that did', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-idle-')), 'proxy.yaml');
    writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\ntimeouts:\n  sessionIdleNoStreamMs: 2000\n`);
    const proxy = await startProxy(['--config', file]);
    // Each stream opens right after its session: starting the next session's upstream takes a while on a busy machine.
    const listened = await rawSession(proxy.url);
    const closed = await openGetStream(proxy.url, listened);
    closed.close();
    const listening = await rawSession(proxy.url);
    const open = await openGetStream(proxy.url, listening);
    expect([closed.status, open.status]).toEqual([200, 200]);
    const silent = await rawSession(proxy.url);
    const quietSince = Date.now();
    // Waiting on the gauge, not on requests: a request to the session would count as use.
    await eventually(async () => (await metricValue(proxy.url, 'mcp_proxy_sessions')) === 2, 10_000, 'the stream-less session ended');
    expect(Date.now() - quietSince).toBeGreaterThanOrEqual(1950);
    await logged(
      proxy,
      (e) => /^session idle \(timeouts\.sessionIdleNoStreamMs: its client never opened a GET stream\)/.test(e.msg) && e.idleMs >= 2000,
    );
    expect((await rawPost(proxy.url, callTool(1, 'echo', { text: 'x' }), silent)).status).toBe(404);
    for (const [i, headers] of [listened, listening].entries()) {
      const reply = await rawPost(proxy.url, callTool(2 + i, 'echo', { text: 'still here' }), headers);
      expect(reply.messages.at(-1)?.result?.content?.[0]?.text).toBe('still here');
    }
    open.close();
  });
});
