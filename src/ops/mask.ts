/**
 * Masks what looks like a secret in text the proxy shows to clients or probes (an upstream's
 * last stderr lines, command lines, URLs): `name=value` and `name: value` where the name sounds
 * secret (also inside query strings), bearer tokens, and URL passwords. Upstream output is
 * untrusted, so this is a word scan, linear in the text; regular expressions only ever see one
 * short name.
 */

const SECRET_NAME = /token|secret|passw(?:or)?d|api[_-]?key|auth|credential|signature|private[_-]?key|^key$|^sig$|^pwd$/i;
const SCHEMES = new Set(['bearer', 'basic', 'token']);
const MASK = '***';

export function maskSecrets(text: string): string {
  const parts = text.split(/(\s+)/); // words at even indexes, whitespace at odd ones
  let maskNext = false;
  for (let i = 0; i < parts.length; i += 2) {
    const word = parts[i];
    if (word === '') continue;
    const bare = word.replace(/^["'{(]+/, '');
    if (maskNext && !SCHEMES.has(bare.toLowerCase())) {
      parts[i] = maskValue(word);
      maskNext = false;
      continue;
    }
    if (SCHEMES.has(bare.toLowerCase()) && (parts[i + 2]?.length ?? 0) >= 8) {
      maskNext = true;
      continue;
    }
    // `name:` or `"name":` with the value in the next word.
    if (word.endsWith(':') && isSecretName(word.slice(0, -1))) {
      maskNext = true;
      continue;
    }
    parts[i] = maskWord(word);
  }
  return parts.join('');
}

/** One word: a URL password, and `name=value` / `name:value` pairs (query strings included). */
function maskWord(word: string): string {
  let out = maskUrlPassword(word);
  if (!out.includes('=') && !out.includes(':')) return out;
  const pieces = out.split(/([?&;,])/);
  for (let i = 0; i < pieces.length; i += 2) {
    const piece = pieces[i];
    const sep = firstOf(piece, '=', ':');
    if (sep > 0 && sep < piece.length - 1 && isSecretName(piece.slice(0, sep)) && !piece.startsWith('//', sep + 1)) {
      pieces[i] = piece.slice(0, sep + 1) + maskValue(piece.slice(sep + 1));
    }
  }
  out = pieces.join('');
  return out;
}

/** scheme://user:password@host → scheme://user:***@host */
function maskUrlPassword(word: string): string {
  const scheme = word.indexOf('://');
  if (scheme < 0) return word;
  const start = scheme + 3;
  const slash = word.indexOf('/', start);
  const at = word.indexOf('@', start);
  if (at < 0 || (slash >= 0 && slash < at)) return word;
  const colon = word.indexOf(':', start);
  if (colon < 0 || colon > at) return word;
  return `${word.slice(0, colon + 1)}${MASK}${word.slice(at)}`;
}

/** The value with its surrounding quotes and trailing punctuation kept. */
function maskValue(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && `"'`.includes(value[start])) start++;
  while (end > start && `"',;)}`.includes(value[end - 1])) end--;
  return start === end ? value : value.slice(0, start) + MASK + value.slice(end);
}

/** Whether a name (a flag, variable or parameter; leading dashes and quotes ignored) sounds like it holds a secret. */
export function isSecretName(raw: string): boolean {
  let start = 0;
  let end = raw.length;
  while (start < end && `-"'{(`.includes(raw[start])) start++;
  while (end > start && `"'`.includes(raw[end - 1])) end--;
  return end > start && end - start <= 64 && SECRET_NAME.test(raw.slice(start, end));
}

function firstOf(text: string, a: string, b: string): number {
  const i = text.indexOf(a);
  const j = text.indexOf(b);
  return i < 0 ? j : j < 0 ? i : Math.min(i, j);
}
