import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FastHistogram } from './histogram.js';

describe('FastHistogram', () => {
  it('is exposed exactly as a prom-client Histogram with the same observations', async () => {
    const buckets = [0.001, 0.01, 0.1, 1];
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Histogram({
      name: 'h_seconds',
      help: 'Help "text" \\ here.',
      labelNames: ['method', 'outcome'],
      buckets,
      registers: [theirs],
    });
    const fast = new FastHistogram('h_seconds', 'Help "text" \\ here.', ['method', 'outcome'], buckets, [ours]);
    const seen: Array<[string, string, number]> = [
      ['tools/call', 'ok', 0.0004],
      ['tools/call', 'ok', 0.02],
      ['ping', 'error', 5],
      ['tools/call', 'ok', 0.001],
      ['odd "na\\me"\n', 'ok', 0.5],
      ['ping', 'error', 0.1],
    ];
    for (const [method, outcome, seconds] of seen) {
      reference.observe({ method, outcome }, seconds);
      fast.child(method, outcome).observe(seconds);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    const json = (await ours.getMetricsAsJSON())[0] as unknown as { values: Array<{ labels: object; value: number }> };
    const reference0 = (await theirs.getMetricsAsJSON())[0] as unknown as { values: Array<{ labels: object; value: number }> };
    expect(json.values.map((v) => [v.labels, v.value])).toEqual(reference0.values.map((v) => [v.labels, v.value]));
  });

  it('takes labels as an object too, and one to three label names', () => {
    const h = new FastHistogram('one_seconds', 'One.', ['transformer'], [1], []);
    h.observe({ transformer: 'trim' }, 0.5);
    h.observe({ transformer: 'trim' }, Number.NaN);
    expect(h.child('trim')).toMatchObject({ count: 1, sum: 0.5 });
    expect(() => new FastHistogram('none', 'None.', [], [1], [])).toThrow(/1 to 3/);
  });
});
