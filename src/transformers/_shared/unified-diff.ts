/**
 * Unified diffs (`git diff`, `git show`, `diff -u`): text in which every byte matters and a
 * line's first character says whether it was removed or added. Shaping leaves them whole: a `-`
 * line is no list item, trailing spaces are part of a line, and the first JSON object in a diff
 * is usually the line it removed.
 */
import type { Budget } from '../budget.js';

/**
 * Whether `text` holds a unified diff: a file header (`diff --git`, or a `--- ` line directly
 * followed by a `+++ ` line) and a hunk header (`@@ -`). One scan over the lines.
 */
export function isUnifiedDiff(text: string, budget?: Budget): boolean {
  if (!text.includes('@@ -')) return false;
  let header = false;
  let hunk = false;
  let afterMinus = false;
  for (let start = 0; start < text.length;) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    budget?.check(end - start + 1);
    if (text.startsWith('diff --git ', start) || (afterMinus && text.startsWith('+++ ', start))) header = true;
    else if (text.startsWith('@@ -', start)) hunk = true;
    if (header && hunk) return true;
    afterMinus = text.startsWith('--- ', start);
    start = end + 1;
  }
  return false;
}
