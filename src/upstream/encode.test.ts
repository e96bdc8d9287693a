import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../jsonrpc/message.js';
import { createStdioUpstream } from './stdio.js';

describe('a send that cannot be serialized', () => {
  it('becomes the request’s failure through the connection’s events, never a throw, and the connection goes on', async () => {
    const received: Array<[Frame, JsonRpcId | undefined]> = [];
    const failed: Array<[JsonRpcId, ProxyError]> = [];
    let ended!: (err: ProxyError) => void;
    const closed = new Promise<ProxyError>((resolve) => (ended = resolve));
    // A real child that echoes each line back: what reaches it comes back as a message.
    const echo = 'process.stdin.pipe(process.stdout)';
    const connection = createStdioUpstream(
      { kind: 'stdio', command: process.execPath, args: ['-e', echo], maxJsonDepth: 256 },
      {
        onMessage: (frame, related) => received.push([frame, related]),
        onFailure: (id, err) => failed.push([id, err]),
        onClose: (err) => ended(err),
      },
      pino({ level: 'silent' }),
      { shutdownGraceMs: 500, children: new Set() },
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => connection.send({ msg: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: cyclic } })).not.toThrow();
    expect(() => connection.send({ msg: { jsonrpc: '2.0', method: 'notifications/x', params: cyclic } })).not.toThrow();
    connection.send({ msg: { jsonrpc: '2.0', id: 8, result: {} } });
    await new Promise<void>((resolve) => {
      const wait = () => (received.length >= 1 && failed.length >= 1 ? resolve() : setTimeout(wait, 20));
      wait();
    });
    expect(failed).toEqual([
      [7, expect.objectContaining({ code: 'BAD_REQUEST', message: expect.stringContaining('could not be sent to the upstream') })],
    ]);
    expect(received.map(([frame]) => frame.msg)).toEqual([{ jsonrpc: '2.0', id: 8, result: {} }]);
    await connection.close();
    expect((await closed).code).toBe('UPSTREAM_CLOSED'); // told once its output is drained, after the exit
  });
});
