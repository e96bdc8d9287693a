import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, matchesTemplate, ServerNames, templateParts } from './names.js';

const a = { name: 'a', prefix: 'a' };
const ab = { name: 'ab', prefix: 'a-b' };
const plain = { name: 'plain', prefix: '' };

describe('ServerNames', () => {
  const names = new ServerNames([a, ab, plain], '_');

  it('prefixes names, and leads a called name back to its server, the longest prefix first', () => {
    expect(names.outer(a, 'echo')).toBe('a_echo');
    expect(names.outer(plain, 'echo')).toBe('echo');
    expect(names.inner('a_echo')).toEqual({ server: a, name: 'echo' });
    expect(names.inner('a-b_echo')).toEqual({ server: ab, name: 'echo' });
    // No prefix matches (or only the bare prefix): the unprefixed server's own name.
    expect(names.inner('echo')).toEqual({ server: plain, name: 'echo' });
    expect(names.inner('a_')).toEqual({ server: plain, name: 'a_' });
    expect(new ServerNames([a], '.').inner('b.echo')).toBeUndefined();
  });

  it('routes a resource to the server that listed it first, then by the templates listed', () => {
    const routes = new ServerNames([a, ab], '_');
    expect(routes.claimUri('file:///x', a)).toBe(a);
    expect(routes.claimUri('file:///x', ab)).toBe(a);
    routes.claimTemplate('notes://{id}/text', ab);
    expect(routes.ownerOf('file:///x')).toBe(a);
    expect(routes.ownerOf('notes://42/text')).toBe(ab);
    expect(routes.ownerOf('notes://4/2/text')).toBeUndefined();
    expect(routes.ownerOf('other://x')).toBeUndefined();
    // A template that starts with an expression would claim every URI: it routes nothing.
    routes.claimTemplate('{+anything}', a);
    expect(routes.ownerOf('other://x')).toBeUndefined();
  });
});

describe('matchesTemplate', () => {
  const matches = (template: string, uri: string) => matchesTemplate(templateParts(template), uri);
  it('matches what a template expands to, a reserved expansion across slashes', () => {
    expect(matches('file:///{+path}', 'file:///a/b/c.txt')).toBe(true);
    expect(matches('users/{id}{?fields}', 'users/7')).toBe(true);
    expect(matches('users/{id}', 'users/7/8')).toBe(false);
    expect(matches('a.b/{x}', 'aXb/1')).toBe(false);
    expect(matches('{a}-{b}', 'x-y-z')).toBe(true);
  });

  it('takes time linear in the URI for templates a backtracking pattern would take forever on', () => {
    const started = performance.now();
    expect(matches('{a}{b}{c}{d}{e}{f}x', 'y'.repeat(4000))).toBe(false);
    expect(matches('{+a}y{+b}y{+c}y{+d}yx', 'y'.repeat(4000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });
});

describe('cursors', () => {
  const known = new Set(['a', 'b']);
  it("holds each server's own cursor, and refuses what it did not give", () => {
    expect(decodeCursor(encodeCursor({ a: 'p2', b: 'x' }), known)).toEqual({ a: 'p2', b: 'x' });
    expect(decodeCursor('not-a-cursor', known)).toBeUndefined();
    expect(decodeCursor(encodeCursor({ c: 'p2' }), known)).toBeUndefined();
    expect(decodeCursor(Buffer.from('{"a":1}').toString('base64url'), known)).toBeUndefined();
    expect(decodeCursor(Buffer.from('{}').toString('base64url'), known)).toBeUndefined();
    expect(decodeCursor('x'.repeat(70_000), known)).toBeUndefined();
  });
});
