/**
 * An upstream in memory: an official SDK server (McpServer) linked to the proxy's
 * UpstreamConnection interface by the SDK's in-memory transport pair. The engine's parts (the
 * relay, emulated sessions, the pool) run against a real server this way, without a process.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ProxyError } from '../../src/jsonrpc/errors.js';
import type { Frame } from '../../src/jsonrpc/message.js';
import type { UpstreamConnection, UpstreamEvents } from '../../src/upstream/types.js';

/** Connects `events` to a fresh server made by `makeServer` (one per upstream session, as a stdio upstream is). */
export function inMemoryUpstream(makeServer: () => McpServer): (events: UpstreamEvents) => UpstreamConnection {
  return (events) => {
    const [proxySide, serverSide] = InMemoryTransport.createLinkedPair();
    let closed = false;
    proxySide.onmessage = (msg) => events.onMessage({ msg: msg as Frame['msg'] });
    proxySide.onclose = () => {
      if (!closed) events.onClose(new ProxyError('UPSTREAM_CLOSED', 'The in-memory upstream closed'));
      closed = true;
    };
    const started = makeServer().connect(serverSide);
    return {
      send: (frame) => void started.then(() => proxySide.send(frame.msg as JSONRPCMessage)),
      close: async () => {
        await started;
        await proxySide.close();
      },
    };
  };
}
