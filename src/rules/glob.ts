/**
 * Globs over tool and prompt names and resource URIs (`*` any run, `?` one character), matched
 * with a two-pointer scan instead of a regular expression: names come from the upstream, and
 * the cost stays at most length × glob length whatever they hold.
 */
export type NameMatcher = (name: string) => boolean;

export function globMatcher(glob: string): NameMatcher {
  return function matchesGlob(name) {
    let g = 0;
    let n = 0;
    let star = -1;
    let resume = 0;
    while (n < name.length) {
      if (g < glob.length && (glob[g] === '?' || glob[g] === name[n])) {
        g++;
        n++;
      } else if (g < glob.length && glob[g] === '*') {
        star = g++;
        resume = n;
      } else if (star !== -1) {
        g = star + 1;
        n = ++resume;
      } else return false;
    }
    while (glob[g] === '*') g++;
    return g === glob.length;
  };
}
