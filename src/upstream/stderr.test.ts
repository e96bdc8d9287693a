import { describe, expect, it } from 'vitest';
import { StderrRecord } from './stderr.js';

const record = (text: string) => {
  const r = new StderrRecord();
  for (const line of text.split('\n')) r.add(line);
  return r;
};

/** What Node prints for an error thrown at the top level of a module. */
const NODE_THROW = [
  '/srv/server.ts:2',
  'if (!process.env.API_KEY) throw new Error(`API_KEY is not set (LEGACY_API_KEY=${key} is no longer read)`);',
  '                                ^',
  '',
  'Error: API_KEY is not set (LEGACY_API_KEY=abc123secret is no longer read)',
  '    at <anonymous> (/srv/server.ts:2:33)',
  '    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)',
  '    at async ModuleLoader.import (node:internal/modules/esm/loader:606:24)',
  '    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5)',
  '',
  'Node.js v20.20.2',
].join('\n');

describe('StderrRecord', () => {
  it('finds the error line of a Node crash, not its source line or stack frames, and masks it', () => {
    const { error, last } = record(NODE_THROW).summary();
    expect(error).toBe('Error: API_KEY is not set (LEGACY_API_KEY=*** is no longer read)');
    expect(last).toBe(
      'at ModuleJob.run (node:internal/modules/esm/module_job:325:25) | at async ModuleLoader.import (node:internal/modules/esm/loader:606:24) | at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5) | Node.js v20.20.2',
    );
  });

  it('keeps the error line however many lines follow it', () => {
    const frames = Array.from({ length: 50 }, (_, i) => `    at frame${i} (x.js:${i}:1)`).join('\n');
    const r = record(`TypeError [ERR_INVALID_ARG_TYPE]: The "path" argument must be of type string\n${frames}`);
    expect(r.summary().error).toBe('TypeError [ERR_INVALID_ARG_TYPE]: The "path" argument must be of type string');
    expect(r.tail).toHaveLength(20);
  });

  it('takes a line with an error word when no `Name: message` line says more', () => {
    expect(record('starting\nCould not open config.json\nbye').summary().error).toBe('Could not open config.json');
    expect(record('Traceback (most recent call last):\n  File "s.py", line 3\nKeyError: \'API_KEY\'').summary().error).toBe(
      "KeyError: 'API_KEY'",
    );
    expect(record('info: listening').summary()).toEqual({ last: 'info: listening' });
  });

  it('says nothing for a process that wrote nothing', () => {
    expect(record('').summary()).toEqual({});
  });
});

describe('StderrRecord, what a warning or a long line must not do', () => {
  it('keeps the crash line after an earlier warning line', () => {
    const { error } = record(['Warning: missing optional FOO_URL, using the default', ...NODE_THROW.split('\n')].join('\n')).summary();
    expect(error).toBe('Error: API_KEY is not set (LEGACY_API_KEY=*** is no longer read)');
  });

  it('masks a secret before it clips a long line, so no part of it shows', () => {
    const token = `ghp_${'a1B2'.repeat(10)}`;
    const { error } = record(`Error: ${'x'.repeat(270)} using ${token}`).summary();
    expect(error).not.toContain('a1B2');
    expect(error!.length).toBeLessThanOrEqual(301);
  });
});
