import { describe, expect, it } from 'vitest';
import { testContext } from '../_shared/test-context.js';
import { audience } from './index.js';

const result = {
  content: [
    { type: 'text', text: 'for both' },
    { type: 'text', text: 'for the model', annotations: { audience: ['assistant'] } },
    { type: 'text', text: 'for people', annotations: { audience: ['user'] } },
  ],
};

describe('audience', () => {
  const fn = audience.create({});
  it('keeps what the negotiated audience may see', async () => {
    expect((await fn(result, testContext('tools/call', ['agent'])))?.content).toEqual([result.content[0], result.content[1]]);
    expect((await fn(result, testContext('tools/call', ['human'])))?.content).toEqual([result.content[0], result.content[2]]);
  });
  it('does nothing without exactly one audience, and never filters down to nothing', async () => {
    expect(await fn(result, testContext('tools/call', []))).toBeUndefined();
    expect(await fn(result, testContext('tools/call', ['agent', 'human']))).toBeUndefined();
    expect(await fn({ content: [result.content[2]] }, testContext('tools/call', ['agent']))).toBeUndefined();
  });
});
