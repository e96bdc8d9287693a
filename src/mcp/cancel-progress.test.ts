import { describe, expect, it } from 'vitest';
import {
  cancelledNotification,
  cancelledOf,
  invalidProgressToken,
  isProgressToken,
  progressTokenOf,
  requestProgressToken,
  withProgressToken,
  withRequestProgressToken,
} from './cancel-progress.js';

describe('cancel and progress notifications', () => {
  it('reads a cancelled notification, and nothing else', () => {
    expect(cancelledOf(cancelledNotification(7, 'gone'))).toEqual({ requestId: 7, reason: 'gone' });
    expect(cancelledOf({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: { x: 1 }, reason: 5 } })).toEqual({
      requestId: undefined,
      reason: '5',
    });
    expect(cancelledOf({ jsonrpc: '2.0', method: 'notifications/cancelled' })).toEqual({ requestId: undefined, reason: undefined });
    expect(cancelledOf({ jsonrpc: '2.0', id: 1, method: 'notifications/cancelled', params: { requestId: 1 } })).toBeUndefined();
    expect(cancelledOf({ jsonrpc: '2.0', method: 'notifications/progress', params: { requestId: 1 } })).toBeUndefined();
  });

  it('takes a string or an integer as a progress token, as the schema does, and says why anything else is not one', () => {
    expect([isProgressToken('p'), isProgressToken(''), isProgressToken(3), isProgressToken(-1)]).toEqual([true, true, true, true]);
    expect([isProgressToken(1.5), isProgressToken({}), isProgressToken(true), isProgressToken(null), isProgressToken(undefined)]).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(invalidProgressToken(undefined)).toBeUndefined();
    expect(invalidProgressToken({ _meta: { progressToken: 7 } })).toBeUndefined();
    expect(invalidProgressToken({ _meta: { progressToken: { a: 1 } } })).toMatch(
      /^Invalid params: _meta\.progressToken must be a string or an integer, not \{"a":1\}/,
    );
  });

  it('renames progress tokens both ways, keeping the rest', () => {
    const params = { name: 't', _meta: { progressToken: 'client', other: 1 } };
    expect(requestProgressToken(params)).toBe('client');
    expect(requestProgressToken({ name: 't' })).toBeUndefined();
    expect(withRequestProgressToken(params, 3)).toEqual({ name: 't', _meta: { progressToken: 3, other: 1 } });
    const n = { jsonrpc: '2.0' as const, method: 'notifications/progress', params: { progressToken: 3, progress: 1 } };
    expect(progressTokenOf(n)).toBe(3);
    expect(withProgressToken(n, 'client')).toEqual({ ...n, params: { progressToken: 'client', progress: 1 } });
  });
});
