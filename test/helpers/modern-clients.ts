/**
 * The official v2 client (`@modelcontextprotocol/client`, modern era 2026-07-28) connected
 * through the proxy on either front, with handlers for the input a server may ask for (the
 * client fulfils `input_required` results through them).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { PROXY_MAIN } from './processes.js';
import type { Front } from './clients.js';

export const MODERN = '2026-07-28';
export const NEGOTIATION = 'io.modelcontextprotocol/content-negotiation';

export interface ModernConnected {
  client: Client;
  /** Input requests the client fulfilled, by method. */
  received: Record<string, unknown[]>;
  close(): Promise<void>;
}

export interface ModernOptions {
  mode?: 'auto' | 'pin';
  /** Content-negotiation feature tags declared in the client's capabilities. */
  features?: string[];
  /** Declare sampling, elicitation and roots (default true). */
  input?: boolean;
  /** Declare roots with the rest of the input (default true). */
  roots?: boolean;
}

function newModernClient(received: Record<string, unknown[]>, o: ModernOptions): Client {
  const input = { sampling: {}, elicitation: { form: {} }, ...(o.roots === false ? {} : { roots: {} }) };
  const capabilities: Record<string, unknown> = o.input === false ? {} : input;
  if (o.features) capabilities.extensions = { [NEGOTIATION]: { features: o.features } };
  const client = new Client(
    { name: 'negotiate-proxy-modern-tests', version: '1.0.0' },
    { capabilities, versionNegotiation: { mode: o.mode === 'auto' ? 'auto' : { pin: MODERN } } },
  );
  if (o.input === false) return client; // the SDK refuses handlers for undeclared capabilities
  const note = (method: string, params: unknown) => (received[method] ??= []).push(params);
  client.setRequestHandler('sampling/createMessage', async (req) => {
    note('sampling/createMessage', req.params);
    const first = (req.params.messages[0]?.content ?? {}) as { text?: string };
    return {
      model: 'test-model',
      role: 'assistant',
      content: { type: 'text', text: `sampled: ${first.text ?? ''}` },
      stopReason: 'endTurn',
    };
  });
  client.setRequestHandler('elicitation/create', async (req) => {
    note('elicitation/create', req.params);
    const schema = (
      req.params as { requestedSchema?: { properties?: Record<string, { type?: string; enum?: unknown[]; default?: unknown }> } }
    ).requestedSchema;
    const content: Record<string, unknown> = {};
    for (const [key, prop] of Object.entries(schema?.properties ?? {})) {
      content[key] =
        prop.default ?? prop.enum?.[0] ?? (prop.type === 'number' || prop.type === 'integer' ? 1 : prop.type === 'boolean' ? true : 'x');
    }
    return { action: 'accept', content } as never;
  });
  if (o.roots === false) return client;
  client.setRequestHandler('roots/list', async (req) => {
    note('roots/list', req.params);
    return { roots: [{ uri: 'file:///tmp/negotiate-proxy-test', name: 'test-root' }] };
  });
  return client;
}

/** A v2 client on the proxy's HTTP endpoint (`url`) or on a proxy it spawns with --stdio (`upstreamArg`). */
export async function connectModern(
  front: Front,
  target: { url: string } | { upstreamArg: string },
  o: ModernOptions = {},
): Promise<ModernConnected> {
  const received: Record<string, unknown[]> = {};
  const client = newModernClient(received, o);
  if (front === 'http') {
    await client.connect(new StreamableHTTPClientTransport(new URL((target as { url: string }).url)));
  } else {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [PROXY_MAIN, '--stdio', '--upstream', (target as { upstreamArg: string }).upstreamArg, '--log-level', 'warn'],
      env: { ...process.env } as Record<string, string>,
      stderr: 'pipe',
    });
    await client.connect(transport);
  }
  return { client, received, close: () => client.close() };
}
