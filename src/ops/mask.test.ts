import { describe, expect, it } from 'vitest';
import { maskSecrets } from './mask.js';

describe('maskSecrets', () => {
  it.each([
    ['Error: API_KEY=abc123 is not valid', 'Error: API_KEY=*** is not valid'],
    ['connecting with --token=s3cr3t and more', 'connecting with --token=*** and more'],
    ['{"client_secret": "xyz", "name": "ok"}', '{"client_secret": "***", "name": "ok"}'],
    ['GET https://h/x?sig=AbC123&user=bob', 'GET https://h/x?sig=***&user=bob'],
    ['Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc', 'Authorization: Bearer ***'],
    ['db at postgres://app:hunter2@db:5432/x failed', 'db at postgres://***@db:5432/x failed'],
    ['cloning https://ghp_aaaaBBBBccccDDDDeeeeFFFF1234@github.com/x', 'cloning https://***@github.com/x'],
    ['start --password hunter2 --db-password=x2 --name n', 'start --password *** --db-password=*** --name n'],
    ['aws_secret_access_key = wJalrXUtnFEMI/K7MDENG', 'aws_secret_access_key = ***'],
    ['found ghp_aaaaBBBBccccDDDDeeeeFFFF1234 in (sk-proj-abcdefghijklmnopqrst) and AKIAIOSFODNN7EXAMPLE.', 'found *** in (***) and ***.'],
    ['Server=db;User Id=sa;Password=pw1;Encrypt=true', 'Server=db;User Id=sa;Password=***;Encrypt=true'],
    ['mysql --pass hunter2 DB_PASS=x2 pass=x3 --passthrough on', 'mysql --pass *** DB_PASS=*** pass=*** --passthrough on'],
    ['header eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlX2hlcmU', 'header ***'],
    ['password: correct horse', 'password: *** horse'],
    ['env GITHUB_TOKEN=ghp_abcdef, retrying', 'env GITHUB_TOKEN=***, retrying'],
  ])('%s', (input, expected) => {
    expect(maskSecrets(input)).toBe(expected);
  });

  it('runs in linear time on long adversarial words', () => {
    for (const text of [
      'a'.repeat(200_000),
      `${'ghp_'.repeat(50_000)}`,
      `x://${'@'.repeat(100_000)}`,
      `${'-password '.repeat(20_000)}`,
      `eyJ${'a'.repeat(100_000)}.`,
    ]) {
      const started = performance.now();
      maskSecrets(text);
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });

  it('leaves ordinary text alone', () => {
    const text = 'Error: Cannot find module "./server.js" at line 3 (keyboard layout: us) see https://example.com/docs';
    expect(maskSecrets(text)).toBe(text);
  });
});
