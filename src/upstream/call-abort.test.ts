import { describe, expect, it } from 'vitest';
import { CallAbort, onAbort } from './call-abort.js';

describe('CallAbort', () => {
  it('aborts once, with the first reason, calling each listener once', () => {
    const abort = new CallAbort();
    const heard: unknown[] = [];
    abort.addEventListener('abort', () => heard.push(abort.reason), { once: true });
    expect(abort.aborted).toBe(false);
    abort.abort('first');
    abort.abort('second');
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe('first');
    expect(heard).toEqual(['first']);
  });

  it('never calls a listener that was removed, nor one added after the abort', () => {
    const abort = new CallAbort();
    let calls = 0;
    const listener = () => calls++;
    abort.addEventListener('abort', listener);
    abort.removeEventListener('abort', listener);
    abort.abort();
    abort.addEventListener('abort', listener);
    abort.abort();
    expect(calls).toBe(0);
  });

  it('runs what waits on a cancellation once: later when it comes, at once when it came already (onAbort), for an AbortSignal too', () => {
    for (const make of [() => new CallAbort(), () => new AbortController()]) {
      const abort = make();
      const signal = abort instanceof CallAbort ? abort : abort.signal;
      const heard: string[] = [];
      onAbort(signal, () => heard.push('before'));
      expect(heard).toEqual([]);
      abort.abort();
      onAbort(signal, () => heard.push('after'));
      abort.abort();
      expect(heard).toEqual(['before', 'after']);
    }
  });
});
