/**
 * Official SDK clients (v1, legacy era) connected directly to an upstream or through the proxy
 * on either front, with handlers for every server→client request so round trips can be checked.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { PROXY_MAIN, startProxy, type Running } from './processes.js';

/** Where an upstream lives: an argv to spawn (stdio) or a URL (Streamable HTTP). */
export type UpstreamRef = { argv: string[] } | { url: string };
export type Front = 'http' | 'stdio';

export const ROOTS = [{ uri: 'file:///tmp/negotiate-proxy-test', name: 'test-root' }];

export interface Connected {
  client: Client;
  /** Requests the client received from the server, by method. */
  received: Record<string, unknown[]>;
  proxy?: Running;
  transport: StreamableHTTPClientTransport | StdioClientTransport;
  close(): Promise<void>;
}

function newClient(received: Record<string, unknown[]>, roots = true): Client {
  const client = new Client(
    { name: 'negotiate-proxy-tests', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: { form: {} }, ...(roots ? { roots: { listChanged: true } } : {}) } },
  );
  const note = (method: string, params: unknown) => (received[method] ??= []).push(params);
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    note(req.method, req.params);
    const first = req.params.messages[0]?.content;
    const text = first && 'text' in first ? String(first.text) : '';
    return { model: 'test-model', role: 'assistant', content: { type: 'text', text: `sampled: ${text}` }, stopReason: 'endTurn' };
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    note(req.method, req.params);
    const schema = (
      req.params as { requestedSchema?: { properties?: Record<string, { type?: string; enum?: unknown[]; default?: unknown }> } }
    ).requestedSchema;
    const content: Record<string, unknown> = {};
    for (const [key, prop] of Object.entries(schema?.properties ?? {})) {
      content[key] =
        prop.default ?? prop.enum?.[0] ?? (prop.type === 'number' || prop.type === 'integer' ? 1 : prop.type === 'boolean' ? true : 'x');
    }
    return { action: 'accept', content };
  });
  if (!roots) return client; // the SDK refuses handlers for undeclared capabilities
  client.setRequestHandler(ListRootsRequestSchema, async (req) => {
    note(req.method, req.params);
    return { roots: ROOTS };
  });
  return client;
}

/** `roots`: whether the client declares roots (default true). */
export async function connectDirect(upstream: UpstreamRef, roots = true): Promise<Connected> {
  const received: Record<string, unknown[]> = {};
  const client = newClient(received, roots);
  const transport =
    'url' in upstream
      ? new StreamableHTTPClientTransport(new URL(upstream.url))
      : new StdioClientTransport({
          command: upstream.argv[0],
          args: upstream.argv.slice(1),
          env: { ...process.env } as Record<string, string>,
          stderr: 'ignore',
        });
  await client.connect(transport);
  return { client, received, transport, close: () => client.close() };
}

/** `upstreamArg` is what `--upstream` gets: a command line or a URL; undefined = the demo. */
export async function connectViaProxy(
  front: Front,
  upstreamArg: string | undefined,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
  roots = true,
): Promise<Connected> {
  const received: Record<string, unknown[]> = {};
  const client = newClient(received, roots);
  const upstreamArgs = upstreamArg === undefined ? [] : ['--upstream', upstreamArg];
  if (front === 'stdio') {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [PROXY_MAIN, '--stdio', ...upstreamArgs, '--log-level', 'warn', ...extraArgs],
      env: { ...process.env, ...env } as Record<string, string>,
      stderr: 'pipe',
    });
    await client.connect(transport);
    return { client, received, transport, close: () => client.close() };
  }
  const proxy = await startProxy([...upstreamArgs, ...extraArgs], env);
  const transport = new StreamableHTTPClientTransport(new URL(proxy.url));
  await client.connect(transport);
  return {
    client,
    received,
    proxy,
    transport,
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
      await proxy.stop();
    },
  };
}

/**
 * The messages an SDK client receives while `during` runs, as its transport hands them over.
 * Progress is read here rather than through `onprogress`: the SDK client drops a progress
 * notification that arrives in the same chunk as the response (which a loaded machine may
 * coalesce), whatever the order on the wire.
 */
export async function receivedDuring<T>(client: Client, during: () => Promise<T>): Promise<{ result: T; messages: any[] }> {
  const transport = client.transport!;
  const onmessage = transport.onmessage!;
  const messages: any[] = [];
  transport.onmessage = (msg, extra) => {
    messages.push(msg);
    onmessage(msg, extra);
  };
  try {
    return { result: await during(), messages };
  } finally {
    transport.onmessage = onmessage;
  }
}

/** The progress notifications among `messages`, as `progress/total message`. */
export const progressOf = (messages: any[]): string[] =>
  messages.filter((m) => m.method === 'notifications/progress').map((m) => `${m.params.progress}/${m.params.total} ${m.params.message}`);
