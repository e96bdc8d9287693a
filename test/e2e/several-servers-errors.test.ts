/**
 * The errors of one server among several name it the way `Server "memory" ended: …` does: the
 * server's name, then what happened to it. Through the built CLI, in front of server-everything
 * over stdio and an HTTP server nothing listens at.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { commandLine, EVERYTHING_STDIO, freePort, startProxy, stopAll } from '../helpers/processes.js';

describe('an unreachable server among several', () => {
  afterAll(stopAll);

  it('fails its calls with an error that names it and then says what happened to it', async () => {
    const proxy = await startProxy([
      '--upstream',
      `everything=${commandLine(EVERYTHING_STDIO)}`,
      '--upstream',
      `remote=http://127.0.0.1:${await freePort()}/mcp`,
    ]);
    const client = new Client({ name: 'several-errors-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    expect(await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } })).toMatchObject({
      content: [{ text: 'Echo: hi' }],
    });
    const failure = await client.callTool({ name: 'remote_echo', arguments: { message: 'hi' } }).then(
      () => undefined,
      (err: Error) => err.message,
    );
    // Not `Server "remote" The upstream could not be reached: …`.
    expect(failure).toMatch(/Server "remote" [a-z][^:]*: .*ECONNREFUSED/);
    await client.close();
  });
});
