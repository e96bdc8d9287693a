import { describe, expect, it } from 'vitest';
import { maskSecrets } from './mask.js';

describe('maskSecrets', () => {
  it.each([
    ['Error: API_KEY=abc123 is not valid', 'Error: API_KEY=*** is not valid'],
    ['connecting with --token=s3cr3t and more', 'connecting with --token=*** and more'],
    ['{"client_secret": "xyz", "name": "ok"}', '{"client_secret": "***", "name": "ok"}'],
    ['GET https://h/x?sig=AbC123&user=bob', 'GET https://h/x?sig=***&user=bob'],
    ['Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc', 'Authorization: Bearer ***'],
    ['db at postgres://app:hunter2@db:5432/x failed', 'db at postgres://app:***@db:5432/x failed'],
    ['password: correct horse', 'password: *** horse'],
    ['env GITHUB_TOKEN=ghp_abcdef, retrying', 'env GITHUB_TOKEN=***, retrying'],
  ])('%s', (input, expected) => {
    expect(maskSecrets(input)).toBe(expected);
  });

  it('leaves ordinary text alone', () => {
    const text = 'Error: Cannot find module "./server.js" at line 3 (keyboard layout: us) see https://example.com/docs';
    expect(maskSecrets(text)).toBe(text);
  });
});
