import { describe, expect, it } from 'vitest';
import { closest, editDistance } from './suggest.js';

describe('closest', () => {
  it('counts insertions, deletions, substitutions and swaps of neighbours as one edit each', () => {
    expect(editDistance('upstrem', 'upstream')).toBe(1);
    expect(editDistance('prot', 'port')).toBe(1);
    expect(editDistance('hots', 'host')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('offers the nearest candidate only when it is close enough to be a typo', () => {
    const flags = ['upstream', 'stdio', 'host', 'port', 'config', 'log-level', 'log-format'];
    expect(closest('upstrem', flags)).toBe('upstream');
    expect(closest('UPSTREAM', flags)).toBe('upstream');
    expect(closest('log-levl', flags)).toBe('log-level');
    expect(closest('bogus', flags)).toBeUndefined();
    expect(closest('xy', flags)).toBeUndefined();
    expect(closest('hast', flags)).toBe('host');
    expect(closest('pxrt', ['host'])).toBeUndefined(); // two edits on a short word: too far
  });
});
