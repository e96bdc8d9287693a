/**
 * Every built-in transformer runs in time linear in its input, whatever the upstream sends.
 * Each one gets adversarial texts (long runs of spaces, backticks, pipes, `#`, dashes, brackets,
 * emphasis markers, unclosed constructs, deep nesting) at 64 KB and 1 MB, with no time budget,
 * and its cost is compared with a plain copy of the same result (a JSON round trip, measured
 * in the same run). A backtracking pattern or a rescan per line costs thousands of copies at
 * these sizes (the patterns this replaced cost over a million copies at 4 KB); the line scans
 * cost 5 to 150.
 * CPU time, best of several runs for a case that looks slow, so other processes on a busy machine do not count.
 */
import { describe, expect, it } from 'vitest';
import { adversarialCosts } from './adversarial.js';

/** The most a transformer may cost, in plain copies of the same result. */
const MAX_COPIES = 300;

describe('transformers on adversarial input', () => {
  it.each([64 * 1024, 1024 * 1024])(
    'cost at most a bounded number of plain copies at %i characters',
    (size) => {
      const costs = adversarialCosts(size, MAX_COPIES / 2);
      const worst = costs.reduce((a, b) => (b.copies > a.copies ? b : a));
      console.log(
        `${size} characters: worst ${worst.transformer} on ${worst.method} "${worst.input}": ${worst.ms.toFixed(1)} ms, ${worst.copies.toFixed(0)} plain copies`,
      );
      expect(
        costs
          .filter((c) => c.copies > MAX_COPIES)
          .map((c) => `${c.transformer} on ${c.method} "${c.input}": ${c.ms.toFixed(1)} ms, ${c.copies.toFixed(0)} copies`),
      ).toEqual([]);
    },
    300_000,
  );
});
