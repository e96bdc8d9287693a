/**
 * Reading documentation for test/e2e/docs.test.ts: fenced code blocks with their `doc-test`
 * markers, relative links and heading anchors, and just enough shell syntax to cut a block into
 * command lines and to tell which program each one runs. No Markdown or shell library: the
 * subset the docs use is small, and the test states it.
 */

/** What a `<!-- doc-test: … -->` comment right before a fence says about the block. */
export interface Directives {
  /** yaml: a fragment, placed at this dot-separated path of an otherwise empty config. */
  fragment?: string;
  /** yaml: the config must not validate (exit 2). */
  invalid?: boolean;
  /** yaml: the file name it is validated as (shows in validate's messages). */
  file?: string;
  /** yaml: not a proxy config (Compose, Kubernetes): only parsed. */
  parseOnly?: boolean;
  /** Environment for validate or the commands. */
  env: Record<string, string>;
  /** The exit code the block ends with (sh, ts). */
  exit: number;
  /** Text the block's output must contain. */
  expect: string[];
  /** Not run here: the file (a test) that covers it, and what that file must mention. */
  coveredBy?: string;
  mentions: string[];
  /** json / text: the output of the block before it. */
  output?: boolean;
  /** text: a diagram or sample, not checked. */
  illustration?: boolean;
  /** json: an MCP host's config (`mcpServers` or `servers`): each server in it is connected to and used. */
  hostConfig?: boolean;
}

export interface DocBlock {
  /** Path relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  directives: Directives;
}

const MARKER = /^\s*<!--\s*doc-test:(.*)-->\s*$/;
const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*$/;

/** Parses the text of a marker: directives separated by `;`, each `name` or `name=value`. */
export function parseDirectives(text: string, where: string): Directives {
  const d: Directives = { env: {}, exit: 0, expect: [], mentions: [] };
  for (const part of text
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq).trim();
    const value = eq < 0 ? '' : part.slice(eq + 1).trim();
    const needValue = () => {
      if (!value) throw new Error(`${where}: doc-test directive "${name}" needs a value`);
      return value;
    };
    switch (name) {
      case 'fragment':
        d.fragment = needValue();
        break;
      case 'invalid':
        d.invalid = true;
        break;
      case 'file':
        d.file = needValue();
        break;
      case 'parse-only':
        d.parseOnly = true;
        break;
      case 'env':
        for (const pair of needValue().split(',')) {
          const i = pair.indexOf('=');
          if (i < 1) throw new Error(`${where}: env wants NAME=value, got "${pair}"`);
          d.env[pair.slice(0, i).trim()] = pair.slice(i + 1).trim();
        }
        break;
      case 'exit':
        d.exit = Number(needValue());
        break;
      case 'expect':
        d.expect.push(needValue());
        break;
      case 'covered-by':
        d.coveredBy = needValue();
        break;
      case 'mentions':
        d.mentions.push(
          ...needValue()
            .split(',')
            .map((m) => m.trim())
            .filter(Boolean),
        );
        break;
      case 'output':
        d.output = true;
        break;
      case 'illustration':
        d.illustration = true;
        break;
      case 'host-config':
        d.hostConfig = true;
        break;
      default:
        throw new Error(`${where}: unknown doc-test directive "${name}"`);
    }
  }
  if (!Number.isInteger(d.exit)) throw new Error(`${where}: exit wants an integer`);
  if (d.coveredBy && !d.mentions.length) throw new Error(`${where}: covered-by needs mentions=… (what the covering file must mention)`);
  return d;
}

/** Every fenced code block of a Markdown file, with the directives of the marker right before it. */
export function extractBlocks(file: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(FENCE);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = lines[j].match(FENCE);
      if (close && close[2][0] === fence[0] && close[2].length >= fence.length && !close[3]) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j].trimStart());
    }
    if (j >= lines.length) throw new Error(`${file}:${i + 1}: unclosed code fence`);
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') k--;
    const marker = k >= 0 ? lines[k].match(MARKER) : null;
    const where = `${file}:${i + 1}`;
    blocks.push({
      file,
      line: i + 1,
      lang: lang.toLowerCase(),
      code: body.join('\n'),
      directives: parseDirectives(marker?.[1] ?? '', where),
    });
    i = j;
  }
  return blocks;
}

/** The lines outside fenced blocks (blank inside them), inline code spans masked unless `keepCode`. */
export function prose(text: string, keepCode = false): string[] {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const m = line.match(FENCE);
    if (fence) {
      if (m && m[2][0] === fence[0] && m[2].length >= fence.length && !m[3]) fence = undefined;
      out.push('');
    } else if (m) {
      fence = m[2];
      out.push('');
    } else out.push(keepCode ? line : line.replace(/`[^`]+`/g, '`code`'));
  }
  return out;
}

/** Relative links `[text](target)` in a file's prose, with their line numbers. */
export function relativeLinks(text: string): Array<{ target: string; line: number }> {
  const links: Array<{ target: string; line: number }> = [];
  prose(text).forEach((line, i) => {
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(m[1])) continue; // http:, https:, mailto:
      links.push({ target: m[1], line: i + 1 });
    }
  });
  return links;
}

/** The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces to "-", "-1", "-2" for repeats. */
export function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(text, true)) {
    const m = line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
    if (!m) continue;
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n ? `${base}-${n}` : base);
  }
  return anchors;
}

/**
 * Cuts shell text into command lines: a newline ends a command unless it is inside quotes or
 * escaped with a backslash; comments are dropped.
 */
export function shellCommands(code: string): string[] {
  const commands: string[] = [];
  let cur = '';
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (quote) {
      cur += c;
      if (c === '\\' && quote === '"') cur += code[++i] ?? '';
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      cur += c;
    } else if (c === '\\' && code[i + 1] === '\n') {
      cur += ' ';
      i++;
    } else if (c === '#' && (cur === '' || /\s/.test(cur[cur.length - 1]))) {
      while (i < code.length && code[i] !== '\n') i++;
      i--;
    } else if (c === '\n') {
      if (cur.trim()) commands.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  if (quote) throw new Error(`unclosed ${quote} in:\n${code}`);
  if (cur.trim()) commands.push(cur.trim());
  return commands;
}

/** The words of one command (quotes kept, `$( … )` kept whole), split where the shell would. */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let cur = '';
  let quote: "'" | '"' | undefined;
  let depth = 0;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      cur += c;
      if (c === '\\' && quote === '"') cur += command[++i] ?? '';
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
      cur += c;
    } else if (c === '$' && command[i + 1] === '(') {
      depth++;
      cur += '$(';
      i++;
    } else if (c === ')' && depth > 0) {
      depth--;
      cur += c;
    } else if (/\s/.test(c) && depth === 0) {
      if (cur) words.push(cur);
      cur = '';
    } else cur += c;
  }
  if (cur) words.push(cur);
  return words;
}

/** A command line cut at `|`, `&&`, `||` and `;` (outside quotes and `$( … )`), as lists of words. */
export function simpleCommands(command: string): string[][] {
  const parts: string[][] = [[]];
  for (const w of shellWords(command)) {
    if (w === '|' || w === '&&' || w === '||' || w === ';') parts.push([]);
    else parts[parts.length - 1].push(w);
  }
  return parts.filter((p) => p.length);
}

/** A word with its quotes removed (for reading arguments, not for running them). */
export function unquote(word: string): string {
  return word.replace(/^'(.*)'$/s, '$1').replace(/^"(.*)"$/s, '$1');
}

/** The words of a simple command after its leading `NAME=value` assignments. */
export function programWords(words: string[]): string[] {
  let i = 0;
  while (i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i])) i++;
  return words.slice(i);
}

/** Is `sub` contained in `whole`: every key of an object with a contained value, arrays element by element with equal length. */
export function containsJson(whole: unknown, sub: unknown): boolean {
  if (Array.isArray(sub)) return Array.isArray(whole) && whole.length === sub.length && sub.every((s, i) => containsJson(whole[i], s));
  if (sub !== null && typeof sub === 'object') {
    if (whole === null || typeof whole !== 'object' || Array.isArray(whole)) return false;
    return Object.entries(sub).every(([k, v]) => k in whole && containsJson((whole as Record<string, unknown>)[k], v));
  }
  return Object.is(whole, sub);
}

/** The JSON documents in a command's output: JSON values on their own or run together (curl adds no newline), and SSE `data:` lines. */
export function jsonDocuments(output: string): unknown[] {
  const docs: unknown[] = [];
  for (const raw of output.split('\n')) {
    const line = raw.replace(/^data:\s?/, '');
    // Cut the line into top-level {…} / […] spans, strings respected.
    let depth = 0;
    let start = -1;
    let inString = false;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (inString) {
        if (c === '\\') i++;
        else if (c === '"') inString = false;
      } else if (c === '"' && depth > 0) inString = true;
      else if (c === '{' || c === '[') {
        if (depth++ === 0) start = i;
      } else if ((c === '}' || c === ']') && depth > 0 && --depth === 0) {
        try {
          docs.push(JSON.parse(line.slice(start, i + 1)));
        } catch {
          // not JSON: skipped
        }
      }
    }
  }
  return docs;
}
