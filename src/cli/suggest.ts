/**
 * "Did you mean …?" for a mistyped flag or command: the closest known word by edit distance,
 * offered only when it is close enough to be a typo (a guess far off would mislead).
 */

/** The candidate closest to `given` (ties: the earlier one), or undefined when none is a likely typo of it. */
export function closest(given: string, candidates: readonly string[]): string | undefined {
  const word = given.toLowerCase();
  // Short words differ in one place at most, or every short word would be "close" to every other.
  const limit = word.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    const d = editDistance(word, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Insertions, deletions, substitutions and swaps of neighbours each count one (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    before = previous;
    previous = row;
  }
  return previous[b.length];
}
