/**
 * Markdown block syntax recognised one line at a time, with index scans only (no regular
 * expressions), so that any line costs time linear in its length: ATX headings, fences,
 * table rows and delimiter rows, thematic breaks.
 */
const SPACE = 0x20;
const TAB = 0x09;
const HASH = 0x23;
const PIPE = 0x7c;
const BACKSLASH = 0x5c;

export const isBlank = (line: string): boolean => line.trim() === '';

/** Leading spaces (tabs count as 4). */
export function indentOf(line: string): number {
  let n = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === SPACE) n++;
    else if (c === TAB) n += 4;
    else break;
  }
  return n;
}

/** `## Title ##` → { level: 2, text: 'Title' }; undefined when the line is no ATX heading. */
export function parseHeading(line: string): { level: number; text: string } | undefined {
  let i = 0;
  while (i < 3 && line.charCodeAt(i) === SPACE) i++;
  let level = 0;
  while (level < 7 && line.charCodeAt(i + level) === HASH) level++;
  if (level === 0 || level > 6) return undefined;
  const start = i + level;
  if (start < line.length && line.charCodeAt(start) !== SPACE && line.charCodeAt(start) !== TAB) return undefined;
  const body = line.slice(start).trim();
  let end = body.length;
  while (end > 0 && body.charCodeAt(end - 1) === HASH) end--;
  if (end === 0) return { level, text: '' };
  // A closing run of #s counts only after a space: `# C#` keeps its #.
  const closed = end < body.length && (body.charCodeAt(end - 1) === SPACE || body.charCodeAt(end - 1) === TAB);
  return { level, text: closed ? body.slice(0, end).trim() : body };
}

/** A fence line (``` or ~~~, three or more, indented at most 3): its marker character and length. */
export function parseFence(line: string): { char: string; length: number; info: string } | undefined {
  let i = 0;
  while (i < 3 && line.charCodeAt(i) === SPACE) i++;
  const char = line[i];
  if (char !== '`' && char !== '~') return undefined;
  let n = 0;
  while (line[i + n] === char) n++;
  if (n < 3) return undefined;
  const info = line.slice(i + n).trim();
  if (char === '`' && info.includes('`')) return undefined;
  return { char, length: n, info };
}

/** Whether `line` closes a fence opened by `open` (same character, at least as long, nothing after). */
export function closesFence(line: string, open: { char: string; length: number }): boolean {
  const f = parseFence(line);
  return f !== undefined && f.char === open.char && f.length >= open.length && f.info === '';
}

/** `|---|:--:|`: a table's delimiter row (dashes with optional colons between pipes). */
export function isTableDelimiter(line: string): boolean {
  const cells = splitRow(line);
  if (cells.length === 0 || (cells.length === 1 && !line.includes('|'))) return false;
  for (const cell of cells) {
    const t = cell.trim();
    let a = 0;
    let b = t.length;
    if (t.charCodeAt(a) === 0x3a /* : */) a++;
    if (b > a && t.charCodeAt(b - 1) === 0x3a) b--;
    if (b <= a) return false;
    for (let i = a; i < b; i++) if (t.charCodeAt(i) !== 0x2d /* - */) return false;
  }
  return true;
}

/** A row that can belong to a table: it has an unescaped pipe. */
export function isTableRow(line: string): boolean {
  for (let i = line.indexOf('|'); i !== -1; i = line.indexOf('|', i + 1)) if (line.charCodeAt(i - 1) !== BACKSLASH) return true;
  return false;
}

/** The raw cells of a table row: outer pipes removed, split on unescaped pipes, `\|` kept as `|`. */
export function splitRow(row: string): string[] {
  let t = row.trim();
  if (t.charCodeAt(0) === PIPE) t = t.slice(1);
  if (t.charCodeAt(t.length - 1) === PIPE && t.charCodeAt(t.length - 2) !== BACKSLASH) t = t.slice(0, -1);
  if (t === '') return [];
  const cells: string[] = [];
  let cell = '';
  let from = 0;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c === BACKSLASH && t.charCodeAt(i + 1) === PIPE) {
      cell += t.slice(from, i) + '|';
      from = i + 2;
      i++;
    } else if (c === PIPE) {
      cells.push(cell + t.slice(from, i));
      cell = '';
      from = i + 1;
    }
  }
  cells.push(cell + t.slice(from));
  return cells;
}

/** `---`, `***`, `___`: three or more of one of them, spaces allowed between. */
export function isThematicBreak(line: string): boolean {
  return runOf(line, '-*_') >= 3;
}

/** `===` or `---` under a paragraph line: that line is a heading. */
export function isSetextUnderline(line: string): boolean {
  const t = line.trim();
  return t !== '' && (t[0] === '=' || t[0] === '-') && !t.includes(' ') && runOf(t, t[0]) === t.length;
}

/** How many times the line's first marker character (one of `chars`) occurs, or 0 if anything else but spaces does. */
function runOf(line: string, chars: string): number {
  const t = line.trim();
  const c = t[0];
  if (c === undefined || !chars.includes(c)) return 0;
  let n = 0;
  for (let i = 0; i < t.length; i++) {
    if (t[i] === c) n++;
    else if (t[i] !== ' ' && t[i] !== '\t') return 0;
  }
  return n;
}
