import { describe, expect, it } from 'vitest';
import { Readiness } from './readiness.js';

describe('Readiness', () => {
  it('probes once for concurrent checks and reuses the answer within its TTL', async () => {
    let probes = 0;
    const readiness = new Readiness(async () => void probes++, 60_000);
    const [a, b] = await Promise.all([readiness.check(), readiness.check()]);
    expect(probes).toBe(1);
    expect(a).toMatchObject({ ready: true, source: 'probe' });
    expect(b).toBe(a);
    await readiness.check();
    expect(probes).toBe(1);
  });

  it('reports the probe failure as the cause, and probes again once the answer is stale', async () => {
    let fail = true;
    const readiness = new Readiness(async () => {
      if (fail) throw new Error('spawn x ENOENT');
    }, 0);
    expect(await readiness.check()).toMatchObject({ ready: false, cause: 'spawn x ENOENT' });
    fail = false;
    expect(await readiness.check()).toMatchObject({ ready: true });
  });

  it('takes what traffic shows as the freshest answer, without probing', async () => {
    let probes = 0;
    const readiness = new Readiness(async () => void probes++, 60_000);
    readiness.note(false, 'the upstream exited before it answered');
    expect(await readiness.check()).toMatchObject({ ready: false, cause: 'the upstream exited before it answered', source: 'traffic' });
    readiness.note(true);
    expect(await readiness.check()).toMatchObject({ ready: true, source: 'traffic' });
    expect(probes).toBe(0);
  });
});
