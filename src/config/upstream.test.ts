import { describe, expect, it } from 'vitest';
import { describeUpstream, resolveUpstream } from './upstream.js';

describe('resolveUpstream', () => {
  it('splits a command line and appends args; an argv array is taken as is', () => {
    expect(
      resolveUpstream(
        {
          command: 'node "my server.js" -v',
          args: ['--x'],
          env: {},
          inheritEnv: false,
          headers: {},
          maxJsonDepth: 256,
        },
        'demo.js',
      ),
    ).toMatchObject({ kind: 'stdio', command: 'node', args: ['my server.js', '-v', '--x'] });
    expect(
      resolveUpstream(
        {
          command: ['python3', '-m', 'srv'],
          args: [],
          env: {},
          inheritEnv: false,
          headers: {},
          maxJsonDepth: 256,
        },
        'demo.js',
      ),
    ).toMatchObject({ command: 'python3', args: ['-m', 'srv'] });
  });
  it('falls back to the demo server', () => {
    expect(
      resolveUpstream(
        {
          args: [],
          env: {},
          inheritEnv: false,
          headers: {},
          maxJsonDepth: 256,
        },
        '/x/demo.js',
      ),
    ).toMatchObject({ kind: 'stdio', command: process.execPath, args: ['/x/demo.js'] });
  });
});

describe('describeUpstream', () => {
  it('masks secrets in command lines and URLs', () => {
    expect(
      describeUpstream({
        kind: 'stdio',
        command: 'srv',
        args: ['--api-key', 'abc', '--token=xyz', '--name', 'n', 'PASSWORD=p'],
        maxJsonDepth: 256,
      }),
    ).toBe('srv --api-key *** --token=*** --name n PASSWORD=***');
    expect(
      describeUpstream({
        kind: 'http',
        url: 'https://u:pw@example.test/mcp?key=k&x=1',
        headers: { Authorization: 'Bearer t' },
        maxJsonDepth: 256,
      }),
    ).toBe('https://***@example.test/mcp?key=***&x=1');
    expect(
      describeUpstream({
        kind: 'stdio',
        command: 'srv',
        args: ['postgres://app:hunter2@db/x', '--password', 'p w', 'Server=d;Password=pw;'],
        maxJsonDepth: 256,
      }),
    ).toBe('srv postgres://***@db/x --password *** w Server=d;Password=***;');
    // Signed URLs (SAS, presigned) carry their secret in sig= / signature= parameters.
    expect(
      describeUpstream({ kind: 'http', url: 'https://h.example/mcp?sv=1&sig=AbC%2Bd&X-Amz-Signature=f00', headers: {}, maxJsonDepth: 256 }),
    ).toBe('https://h.example/mcp?sv=1&sig=***&X-Amz-Signature=***');
  });
});
