/**
 * A gateway in process: the proxy's composition root (createGateway) with the config the CLI
 * would check (defaults from the zod schema, the rules compiled), serving HTTP on 127.0.0.1
 * port 0, in front of an official SDK server on Streamable HTTP in the same process, port 0 too.
 * The upstream is of the legacy era (v1 SDK, the initialize handshake) or of 2026-07-28 (v2 SDK,
 * initialize refused). No child process and no build: the unit project runs it.
 */
import type { McpServer as LegacyServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createMcpHandler, type McpServer as ModernServer } from '@modelcontextprotocol/server';
import pino, { type Logger } from 'pino';
import { checkConfig } from '../../src/cli/check.js';
import type { Config } from '../../src/config/schema.js';
import { listenMcpHttp } from '../../src/demo/serve.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { listenV2Http } from '../fixtures/v2-http.js';

/** The server behind the gateway: a fresh SDK server per upstream session (legacy) or per request (2026-07-28). */
export type KitUpstream = { era: 'legacy'; makeServer: () => LegacyServer } | { era: 'modern'; makeServer: () => ModernServer };

export interface RunningUpstream {
  /** Its Streamable HTTP endpoint, for a client that connects without the proxy. */
  url: string;
  close(): Promise<void>;
}

export interface GatewayOptions {
  upstream: KitUpstream;
  /** Config as a YAML file would give it (upstream.url and listen are the kit's); the schema's defaults fill the rest. */
  config?: Record<string, unknown>;
}

export interface RunningGateway {
  /** The proxy's MCP endpoint. */
  url: string;
  /** The upstream's own endpoint, to compare what it answers with what the proxy does. */
  upstreamUrl: string;
  gateway: Gateway;
  config: Config;
  /** Every log line the gateway wrote, parsed (at the config's logLevel). */
  logs: Array<Record<string, unknown>>;
  /** Stops the gateway, then the upstream: nothing is left listening. */
  close(): Promise<void>;
}

/** Serves `upstream` on 127.0.0.1, port 0. */
export async function startUpstream(upstream: KitUpstream): Promise<RunningUpstream> {
  if (upstream.era === 'legacy') return listenMcpHttp(upstream.makeServer, { host: '127.0.0.1', port: 0 });
  return listenV2Http(createMcpHandler(upstream.makeServer, { legacy: 'reject' }), 0, 'kit-upstream');
}

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const upstream = await startUpstream(opts.upstream);
  try {
    const given = opts.config ?? {};
    const { config, rules } = await checkConfig(undefined, {
      ...given,
      upstream: { ...(given.upstream as object | undefined), url: upstream.url },
      listen: { ...(given.listen as object | undefined), transport: 'http', host: '127.0.0.1', port: 0 },
    });
    const logs: Array<Record<string, unknown>> = [];
    const log: Logger = pino({ level: config.logLevel }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    // As --fail-fast: started means the upstream answered, so no test races the start-up check.
    const gateway = createGateway(config, { log, rules, failFast: { timeoutMs: config.timeouts.initializeMs } });
    let url: string | undefined;
    try {
      url = (await gateway.start()).url;
    } catch (err) {
      await gateway.close();
      throw err;
    }
    return {
      url: url!,
      upstreamUrl: upstream.url,
      gateway,
      config,
      logs,
      async close() {
        await gateway.close();
        await upstream.close();
      },
    };
  } catch (err) {
    await upstream.close();
    throw err;
  }
}
