/**
 * Masks what looks like a secret in text the proxy shows to clients or probes (an upstream's
 * last stderr lines, command lines, URLs): `name=value`, `name: value`, `name = value` and
 * `--name value` where the name sounds secret (also inside query and connection strings), bearer
 * tokens, URL userinfo, and values shaped like well-known credentials (GitHub, GitLab, Slack,
 * Stripe, OpenAI-style, AWS access key ids, Google API keys, npm, Hugging Face, JWTs). Upstream
 * output is untrusted, so this is a word scan, linear in the text; regular expressions only ever
 * see one short name or one word's piece.
 */

const SECRET_NAME = /token|secret|passw(?:or)?d|(?:^|[_.-])pass$|api[_-]?key|auth|credential|signature|private[_-]?key|^key$|^sig$|^pwd$/i;
const SCHEMES = new Set(['bearer', 'basic', 'token']);
const MASK = '***';
/** Credentials recognisable by their shape alone (anchored, one piece of a word at a time; exported for the ReDoS audit). */
export const SECRET_SHAPE = new RegExp(
  `^(?:${[
    'gh[pousr]_[A-Za-z0-9]{20,}', // GitHub
    'github_pat_[A-Za-z0-9_]{20,}',
    'glpat-[A-Za-z0-9_-]{16,}', // GitLab
    'xox[abprs]-[A-Za-z0-9-]{10,}', // Slack
    'sk-[A-Za-z0-9_-]{16,}', // OpenAI, Anthropic
    '[sr]k_(?:live|test)_[A-Za-z0-9]{16,}', // Stripe
    'A[KS]IA[0-9A-Z]{16}', // AWS access key ids
    'AIza[0-9A-Za-z_-]{35}', // Google API keys
    'npm_[A-Za-z0-9]{30,}',
    'hf_[A-Za-z0-9]{30,}', // Hugging Face
    String.raw`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`, // JWT
  ].join('|')})$`,
);
/** Separates the pieces of a word that a credential cannot contain. */
const PIECE_SEPARATOR = /([^A-Za-z0-9_.-]+)/;

export function maskSecrets(text: string): string {
  const parts = text.split(/(\s+)/); // words at even indexes, whitespace at odd ones
  let maskNext = false;
  for (let i = 0; i < parts.length; i += 2) {
    const word = parts[i];
    if (word === '') continue;
    // `name = value` / `name : value`: the value is the word after the sign.
    if (word === '=' || word === ':') continue;
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
    // `name:` or `"name":` with the value in the next word; `--password value`; `name = value`.
    const named = word.endsWith(':') ? word.slice(0, -1) : word;
    const sign = parts[i + 2];
    if (isSecretName(named) && (word.endsWith(':') || (word.startsWith('-') && !word.includes('=')) || sign === '=' || sign === ':')) {
      maskNext = true;
      continue;
    }
    parts[i] = maskWord(word);
  }
  return parts.join('');
}

/** One word: URL userinfo, credential shapes, and `name=value` / `name:value` pairs (query and connection strings included). */
function maskWord(word: string): string {
  let out = maskShapes(maskUserinfo(word));
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

/** scheme://user:password@host (or scheme://token@host) → scheme://***@host */
function maskUserinfo(word: string): string {
  const scheme = word.indexOf('://');
  if (scheme < 0) return word;
  const start = scheme + 3;
  const slash = word.indexOf('/', start);
  const at = word.indexOf('@', start);
  if (at <= start || (slash >= 0 && slash < at)) return word;
  return `${word.slice(0, start)}${MASK}${word.slice(at)}`;
}

/** Pieces of a word shaped like a well-known credential. */
function maskShapes(word: string): string {
  if (word.length < 20) return word;
  const pieces = word.split(PIECE_SEPARATOR);
  let changed = false;
  for (let i = 0; i < pieces.length; i += 2) {
    // A sentence's full stop is not part of the credential before it.
    let end = pieces[i].length;
    while (end > 0 && pieces[i][end - 1] === '.') end--;
    if (end >= 20 && SECRET_SHAPE.test(pieces[i].slice(0, end))) {
      pieces[i] = MASK + pieces[i].slice(end);
      changed = true;
    }
  }
  return changed ? pieces.join('') : word;
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
