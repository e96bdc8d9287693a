/**
 * Sentence templates: `"currently {value}°C in {city} ("` is literal text with placeholders.
 * `{value}` is what the field takes; any other `{name}` matches some text and is not kept.
 * Matching is linear: literals are found with indexOf, and a placeholder spans at most
 * MAX_SPAN characters of one line, so a failed attempt costs a bounded amount of work.
 */

const MAX_SPAN = 200;

export interface Template {
  /** Literal text before, between and after the placeholders (n + 1 pieces for n placeholders). */
  literals: string[];
  placeholders: string[];
}

/** Parses a template; a string says what is wrong with it. */
export function parseTemplate(source: string): Template | string {
  const literals: string[] = [];
  const placeholders: string[] = [];
  let rest = source;
  for (;;) {
    const open = rest.indexOf('{');
    if (open < 0) break;
    const close = rest.indexOf('}', open);
    if (close < 0) return `unclosed "{" in "${source}"`;
    const name = rest.slice(open + 1, close);
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,31}$/.test(name)) return `placeholder "{${name}}" must be a name (letters, digits, _)`;
    literals.push(rest.slice(0, open));
    placeholders.push(name);
    rest = rest.slice(close + 1);
  }
  literals.push(rest);
  if (literals[0] === '') return `"${source}" must start with text, not a placeholder (it anchors the match)`;
  if (!placeholders.includes('value')) return `"${source}" has no {value} placeholder`;
  if (placeholders.filter((p) => p === 'value').length > 1) return `"${source}" has {value} more than once`;
  for (let i = 1; i < placeholders.length; i++) {
    if (literals[i] === '') return `"${source}": placeholders {${placeholders[i - 1]}} and {${placeholders[i]}} need text between them`;
  }
  return { literals, placeholders };
}

/** The text `{value}` matched at the first place the whole template fits, or undefined. */
export function matchTemplate(template: Template, text: string): string | undefined {
  const first = template.literals[0];
  for (let start = text.indexOf(first); start >= 0; start = text.indexOf(first, start + 1)) {
    const value = matchAt(template, text, start + first.length);
    if (value !== undefined) return value;
  }
  return undefined;
}

function matchAt(template: Template, text: string, at: number): string | undefined {
  const { literals, placeholders } = template;
  let pos = at;
  let value: string | undefined;
  for (let i = 0; i < placeholders.length; i++) {
    const after = literals[i + 1];
    // Only a bounded window is searched: a literal that never comes must not cost a scan of the rest.
    const window = text.slice(pos, Math.min(lineEnd(text, pos) + after.length, text.length));
    const end = after === '' ? Math.min(window.length, lineEnd(text, pos) - pos) : window.indexOf(after);
    if (end <= 0 || window.slice(0, end).includes('\n')) return undefined;
    if (placeholders[i] === 'value') value = window.slice(0, end).trim();
    pos += end + after.length;
  }
  return value;
}

/** Where the line ends, or MAX_SPAN characters on, whichever is first (never scans further). */
function lineEnd(text: string, from: number): number {
  const limit = Math.min(text.length, from + MAX_SPAN);
  const nl = text.slice(from, limit).indexOf('\n');
  return nl < 0 ? limit : from + nl;
}
