/**
 * What several servers' answers come to at one endpoint: the initialize result (a capability is
 * offered when some server offers it; the instructions name the servers and carry each one's),
 * and the items of each list under the names clients see.
 */
import type { Logger } from 'pino';
import { isObject } from '../../jsonrpc/message.js';
import { LEGACY_VERSIONS } from '../../mcp/eras.js';
import { PROXY_VERSION } from '../../ops/version.js';
import type { McpResult } from '../../transformers/contract.js';
import type { ServerNames } from './names.js';
import type { AggregateServer } from './server.js';

/** A merged list being built: its items, and the names already in it. */
export interface Merged {
  items: unknown[];
  names: Set<string>;
}

/** A list method: where its items are, which capability offers it, and how an item joins the merged list. */
export interface ListKind {
  key: string;
  capability: string;
  add(into: Merged, item: Record<string, unknown>, server: AggregateServer, names: ServerNames<AggregateServer>, log: Logger): void;
}

/** Under the name clients see; a name another server's item has already (an unprefixed server's `github_x`) is listed once. */
const renamed: ListKind['add'] = (into, item, server, names, log) => {
  if (typeof item.name !== 'string') return;
  const name = names.outer(server, item.name);
  const owner = names.inner(name)?.server;
  if (owner !== server || into.names.has(name)) {
    if (names.firstClash(`${server.name} ${name}`))
      log.warn(
        { name, server: server.name, owner: owner?.name },
        `"${name}" of server "${server.name}" is left out: the name leads to "${owner?.name}"`,
      );
    return;
  }
  into.names.add(name);
  into.items.push({ ...item, name });
};

/** A resource (or template) another server listed first is listed once, as that server's. */
function claimed(field: 'uri' | 'uriTemplate'): ListKind['add'] {
  return (into, item, server, names, log) => {
    const uri = item[field];
    if (typeof uri !== 'string') return;
    const owner = field === 'uri' ? names.claimUri(uri, server) : names.claimTemplate(uri, server);
    if (owner === server) return void into.items.push(item);
    if (names.firstClash(`${server.name} ${uri}`))
      log.warn(
        { [field]: uri, servers: [owner.name, server.name] },
        `servers "${owner.name}" and "${server.name}" both list ${uri}: it is served by "${owner.name}"`,
      );
  };
}

export const LISTS: Record<string, ListKind | undefined> = {
  'tools/list': { key: 'tools', capability: 'tools', add: renamed },
  'prompts/list': { key: 'prompts', capability: 'prompts', add: renamed },
  'resources/list': { key: 'resources', capability: 'resources', add: claimed('uri') },
  'resources/templates/list': { key: 'resourceTemplates', capability: 'resources', add: claimed('uriTemplate') },
};

/** Capabilities whose flags are merged (a flag is on when some server has it on); tasks are the proxy's own at such an endpoint. */
const MERGED = ['tools', 'prompts', 'resources', 'logging', 'completions'];

/**
 * The initialize result for a client: its protocol version when it is a legacy one the proxy
 * knows (each server agreed on its own), the servers' capabilities merged (`seen`: each server's
 * initialize result, in the order of `names.servers`; undefined where none was had).
 */
export function mergedInitialize(names: ServerNames<AggregateServer>, seen: (McpResult | undefined)[], asked: unknown): McpResult {
  const capabilities: Record<string, Record<string, unknown>> = {};
  const experimental: Record<string, unknown> = {};
  const sections: string[] = [];
  for (const [i, server] of names.servers.entries()) {
    const result = seen[i];
    const offered = isObject(result?.capabilities) ? result.capabilities : {};
    for (const name of MERGED) {
      const flags = offered[name];
      if (!isObject(flags)) continue;
      const merged = (capabilities[name] ??= {});
      for (const [flag, on] of Object.entries(flags)) if (on === true || merged[flag] === undefined) merged[flag] = on;
    }
    // The first server to offer an experimental capability describes it.
    if (isObject(offered.experimental)) for (const [key, value] of Object.entries(offered.experimental)) experimental[key] ??= value;
    const head = `## ${server.name}${server.prefix === '' ? '' : ` (tools and prompts named ${names.outer(server, '*')})`}`;
    const instructions = typeof result?.instructions === 'string' ? result.instructions : result ? '' : '(not reachable now)';
    sections.push(instructions ? `${head}\n${instructions}` : head);
  }
  if (Object.keys(experimental).length > 0) capabilities.experimental = experimental;
  return {
    protocolVersion: typeof asked === 'string' && LEGACY_VERSIONS.includes(asked) ? asked : LEGACY_VERSIONS.at(-1),
    capabilities,
    serverInfo: { name: 'mcp-negotiate-proxy', version: PROXY_VERSION, title: `${names.servers.map((s) => s.name).join(', ')}` },
    instructions: `This endpoint serves ${names.servers.length} MCP servers.\n\n${sections.join('\n\n')}`,
  };
}
