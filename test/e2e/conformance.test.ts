/**
 * The official conformance suite (server mode, 2025-11-25 requirements) through the proxy:
 * every scenario that passes against the fixture served directly passes through the proxy,
 * with a stdio upstream and with a Streamable HTTP upstream.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runConformanceDetailed } from '../conformance/run.js';
import { commandLine, fixtureArgv, startHttpFixture, startProxy, stopAll } from '../helpers/processes.js';

async function outcomes(url: string): Promise<Record<string, string>> {
  const detailed = await runConformanceDetailed(url, { timeoutMs: 240_000 });
  return Object.fromEntries([...detailed].map(([name, r]) => [name, r.outcome]));
}

describe('conformance suite through the proxy', () => {
  afterAll(stopAll);

  it('passes every scenario that passes directly, for stdio and HTTP upstreams', async () => {
    const fixture = await startHttpFixture('conformance-server');
    const direct = await outcomes(fixture.url);
    const passedDirectly = Object.keys(direct).filter((s) => direct[s] === 'pass').sort();
    expect(passedDirectly.length).toBeGreaterThanOrEqual(30);

    const viaStdio = await startProxy(['--upstream', commandLine(fixtureArgv('conformance-server'))]);
    const viaHttp = await startProxy(['--upstream', (await startHttpFixture('conformance-server')).url]);
    for (const proxy of [viaStdio, viaHttp]) {
      const got = await outcomes(proxy.url);
      expect(Object.fromEntries(passedDirectly.map((s) => [s, got[s]]))).toEqual(Object.fromEntries(passedDirectly.map((s) => [s, 'pass'])));
    }
  }, 600_000);
});
