/**
 * Official SDK clients for the benchmark: stdio (spawns a server or the proxy's stdio front) and
 * Streamable HTTP. Each session offers one operation, a checked `tools/call echo`.
 */
import { setMaxListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export interface BenchSession {
  /** One `tools/call echo`; throws unless the echo comes back. */
  call(i: number): Promise<void>;
  close(): Promise<void>;
  /** For stdio: the pid of the process the transport spawned (server or proxy). */
  pid?: number;
}

/** How to ask an upstream's echo tool: its argument name differs between servers. */
export interface EchoShape {
  argName: string;
}

function newClient(): Client {
  // No client capabilities: no sampling/roots/elicitation round trips during the benchmark.
  return new Client({ name: 'negotiate-proxy-bench', version: '1.0.0' }, { capabilities: {} });
}

function echo(client: Client, shape: EchoShape): BenchSession['call'] {
  return async (i: number) => {
    const text = `bench ${i}`;
    const res = await client.callTool({ name: 'echo', arguments: { [shape.argName]: text } });
    const first = (res.content as Array<{ type: string; text?: string }> | undefined)?.[0];
    if (res.isError || !first?.text?.includes(text)) throw new Error(`echo failed: ${JSON.stringify(res).slice(0, 300)}`);
  };
}

export async function connectStdio(argv: string[], shape: EchoShape): Promise<BenchSession> {
  const client = newClient();
  const transport = new StdioClientTransport({
    command: argv[0],
    args: argv.slice(1),
    env: { ...process.env } as Record<string, string>,
    stderr: 'ignore',
  });
  await client.connect(transport);
  return { call: echo(client, shape), close: () => client.close(), pid: transport.pid ?? undefined };
}

export async function connectHttp(url: string, shape: EchoShape): Promise<BenchSession> {
  const client = newClient();
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  quietAbortSignal(transport);
  return {
    call: echo(client, shape),
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

/**
 * The SDK HTTP transport passes one session-wide AbortSignal to every fetch; Node's fetch adds a
 * listener to it per request and drops it only when the request is garbage-collected, so a few
 * thousand quick calls push it past undici's limit of 1500 and Node prints a warning per call.
 * The printing would be benchmark noise (it costs the client CPU), so the limit is lifted on
 * that one signal. The listener build-up itself is left as it is: every HTTP client run has it.
 */
function quietAbortSignal(transport: StreamableHTTPClientTransport): void {
  const signal = (transport as unknown as { _abortController?: AbortController })._abortController?.signal;
  if (signal) setMaxListeners(0, signal);
}
