/**
 * Content-negotiation feature tags (io.modelcontextprotocol/content-negotiation): the SEP's
 * grammar (presence `agent`, negation `!interactive`, equality `format=json`, negated equality
 * `format!=xml`, vendor `x-*`) and the set a client declared. Tags are untrusted hints for
 * shaping content, never permissions: anything malformed is dropped with a reason.
 * It lives in mcp/ because rules (`when.features`) and `explain` read tags too, below the extensions.
 */
export type FeatureTag =
  | { kind: 'present'; name: string }
  | { kind: 'absent'; name: string }
  | { kind: 'equals'; name: string; value: string }
  | { kind: 'notEquals'; name: string; value: string };

export const MAX_TAG_LENGTH = 64;
export const MAX_TAGS = 64;

const NAME = '[a-z][a-z0-9._-]*';
const VALUE = '[A-Za-z0-9][A-Za-z0-9._+/-]*';
/** Exported for the regular-expression audit (test/safety). */
export const TAG = new RegExp(`^(!?)(${NAME})(?:(!?=)(${VALUE}))?$`);

/** Parses one tag; returns the reason when it is not well-formed. */
export function parseTag(raw: unknown): FeatureTag | { invalid: string } {
  if (typeof raw !== 'string') return { invalid: `not a string (${raw === null ? 'null' : typeof raw})` };
  if (raw.length === 0 || raw.length > MAX_TAG_LENGTH) return { invalid: `length must be 1–${MAX_TAG_LENGTH}` };
  const m = TAG.exec(raw);
  if (!m) return { invalid: 'does not match name, !name, name=value or name!=value' };
  const [, bang, name, op, value] = m;
  if (bang && op) return { invalid: 'a negated tag cannot carry a value' };
  if (!op) return bang ? { kind: 'absent', name } : { kind: 'present', name };
  return op === '=' ? { kind: 'equals', name, value } : { kind: 'notEquals', name, value };
}

/** What a client declared: present names, names declared absent, and name → value. */
export class FeatureSet {
  readonly present = new Set<string>();
  readonly absent = new Set<string>();
  /** name → declared values (`modality=text` and `modality=image` may both hold). */
  readonly values = new Map<string, Set<string>>();

  static readonly EMPTY = new FeatureSet([]);

  constructor(tags: FeatureTag[]) {
    for (const t of tags) {
      if (t.kind === 'present') this.present.add(t.name);
      else if (t.kind === 'absent') this.absent.add(t.name);
      else if (t.kind === 'equals') this.values.set(t.name, (this.values.get(t.name) ?? new Set()).add(t.value));
      // `name!=value` from a client states only what it does not want; it sets nothing.
    }
  }

  get isEmpty(): boolean {
    return this.present.size === 0 && this.absent.size === 0 && this.values.size === 0;
  }

  /** Does the set satisfy a predicate written in tag syntax (as rules use them)? */
  satisfies(p: FeatureTag): boolean {
    switch (p.kind) {
      case 'present':
        return this.present.has(p.name) || this.values.has(p.name);
      case 'absent':
        return !this.present.has(p.name) && !this.values.has(p.name);
      case 'equals':
        return this.values.get(p.name)?.has(p.value) ?? false;
      case 'notEquals':
        return this.values.has(p.name) && !this.values.get(p.name)!.has(p.value);
    }
  }

  /** The set written back as tags, sorted (for logs and explain). */
  toTags(): string[] {
    return [
      ...[...this.present].map((n) => n),
      ...[...this.absent].map((n) => `!${n}`),
      ...[...this.values].flatMap(([k, vs]) => [...vs].map((v) => `${k}=${v}`)),
    ].sort();
  }
}

export interface ParsedFeatures {
  features: FeatureSet;
  accepted: string[];
  ignored: Array<{ tag: unknown; reason: string }>;
}

/**
 * Parses a client's `features` array. Invalid tags are ignored (the SEP: log, never fail); so is
 * everything past MAX_TAGS. Client capabilities are mirrored in as presence tags (`sampling`,
 * `elicitation`, `roots`, `tasks`), as the SEP recommends, unless the client said `!name`.
 */
export function parseFeatures(raw: unknown, capabilities: Record<string, unknown> = {}, extra: FeatureTag[] = []): ParsedFeatures {
  const tags: FeatureTag[] = [];
  const accepted: string[] = [];
  const ignored: ParsedFeatures['ignored'] = [];
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : (ignored.push({ tag: raw, reason: '`features` must be an array' }), []);
  list.forEach((item, i) => {
    if (i >= MAX_TAGS) return void ignored.push({ tag: item, reason: `more than ${MAX_TAGS} tags` });
    const t = parseTag(item);
    if ('invalid' in t) ignored.push({ tag: typeof item === 'string' ? item.slice(0, MAX_TAG_LENGTH + 8) : item, reason: t.invalid });
    else {
      tags.push(t);
      accepted.push(item as string);
    }
  });
  const declaredAbsent = new Set(tags.filter((t) => t.kind === 'absent').map((t) => t.name));
  for (const cap of ['sampling', 'elicitation', 'roots', 'tasks']) {
    if (capabilities[cap] !== undefined && capabilities[cap] !== null && !declaredAbsent.has(cap)) tags.push({ kind: 'present', name: cap });
  }
  return { features: new FeatureSet([...tags, ...extra]), accepted, ignored };
}
