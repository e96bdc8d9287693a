import { describe, expect, it } from 'vitest';
import { splitCommand } from './command.js';

describe('splitCommand', () => {
  it('splits like a shell, without expanding anything', () => {
    expect(splitCommand('node  server.js --x=1')).toEqual(['node', 'server.js', '--x=1']);
    expect(splitCommand(`node "my server.js" 'a b' c\\ d ''`)).toEqual(['node', 'my server.js', 'a b', 'c d', '']);
    expect(splitCommand('echo $HOME "x\\"y"')).toEqual(['echo', '$HOME', 'x"y']);
  });

  it('rejects an unclosed quote', () => {
    expect(() => splitCommand('node "oops')).toThrow(/unclosed " quote/);
  });
});
