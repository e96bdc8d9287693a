/**
 * Python servers as people write them, behind the proxy: FastMCP 4 and the official Python SDK
 * (test/fixtures/python, installed into .venv by test/python/setup.sh), over stdio and HTTP. A
 * client that declares nothing gets what the server answered (over HTTP both are dual-era: the
 * legacy client's session is relayed to the server's own legacy side).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { connectDirect, connectViaProxy } from '../helpers/clients.js';
import { commandLine, fixtureArgv, startHttpFixture, stopAll } from '../helpers/processes.js';

const SERVERS = ['python/fastmcp_server.py', 'python/sdk_server.py'];

describe.each(SERVERS)('%s behind the proxy', (server) => {
  afterAll(stopAll);

  it.each(['stdio', 'http'] as const)(
    'over %s, lists and calls its tools as directly',
    async (transport) => {
      const upstream = transport === 'stdio' ? { argv: fixtureArgv(server) } : { url: (await startHttpFixture(server)).url };
      const direct = await connectDirect(upstream);
      const proxied = await connectViaProxy('http', 'url' in upstream ? upstream.url : commandLine(upstream.argv));
      try {
        expect((await proxied.client.listTools()).tools).toEqual((await direct.client.listTools()).tools);
        const call = { name: 'weather_json', arguments: { city: 'Bern' } };
        expect(await proxied.client.callTool(call)).toEqual(await direct.client.callTool(call));
      } finally {
        await direct.close();
        await proxied.close();
      }
      // Two Python processes start here (the client's own and the proxy's, besides its era probe): seconds each on a loaded machine.
    },
    120_000,
  );
});
