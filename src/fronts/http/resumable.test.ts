import { describe, expect, it } from 'vitest';
import { EventLog, parseEventId, resumableFor } from './resumable.js';

const limits = { windowMs: 30_000, retryMs: 500, maxBytes: 1000 };

describe('EventLog', () => {
  it('numbers events after the priming event and gives back those after a seen one', () => {
    const log = new EventLog(1000);
    expect(log.priming(500)).toBe(`id: ${log.stream}-0\nretry: 500\ndata: \n\n`);
    const first = log.record(['event: message\ndata: ', Buffer.from('{"a":1}'), '\n\n']);
    expect(first[0]).toBe(`id: ${log.stream}-1\n`);
    log.record(['event: message\ndata: {"b":2}\n\n']);
    expect(log.after(0)!.map((e) => e[0])).toEqual([`id: ${log.stream}-1\n`, `id: ${log.stream}-2\n`]);
    expect(log.after(1)!.length).toBe(1);
    expect(log.after(2)).toEqual([]);
  });

  it('keeps at most maxBytes, and refuses a resume from before what it kept', () => {
    const log = new EventLog(100);
    for (let i = 0; i < 5; i++) log.record([`data: ${'x'.repeat(40)}\n\n`]);
    expect(log.after(1)).toBeUndefined();
    expect(log.after(4)!.length).toBe(1);
    // An event larger than the whole budget is not kept either: a resume from before it is refused.
    log.record([`data: ${'y'.repeat(500)}\n\n`]);
    expect(log.size).toBe(0);
    expect(log.after(5)).toBeUndefined();
    expect(log.after(6)).toEqual([]);
  });
});

describe('parseEventId and resumableFor', () => {
  it('reads only the ids this proxy writes', () => {
    const log = new EventLog(10);
    expect(parseEventId(`${log.stream}-42`)).toEqual({ stream: log.stream, seq: 42 });
    for (const id of ['', '42', 'abc-1', `${log.stream}-`, `${log.stream}-1-2`, `${log.stream}-9999999999`])
      expect(parseEventId(id), id).toBeUndefined();
  });

  it('makes streams resumable for 2025-11-25 clients only, and not with a zero window', () => {
    expect(resumableFor(limits, '2025-11-25')?.retryMs).toBe(500);
    for (const version of ['2025-06-18', '2024-11-05', '2026-07-28', undefined, ['2025-11-25']])
      expect(resumableFor(limits, version)).toBeUndefined();
    expect(resumableFor({ ...limits, windowMs: 0 }, '2025-11-25')).toBeUndefined();
  });
});
