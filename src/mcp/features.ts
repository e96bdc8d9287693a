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

/** The tag that asks for search instead of the tool catalog (src/core/tool-search.ts): the proxy acts on it itself. */
export const SEARCH_TAG: FeatureTag = { kind: 'equals', name: 'tools', value: 'search' };

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
  /** Assigned tags left out because the client's own declaration names their axis. */
  overridden: string[];
}

/**
 * Parses a client's `features` array. Invalid tags are ignored (the SEP: log, never fail); so is
 * everything past MAX_TAGS. Client capabilities are mirrored in as presence tags (`sampling`,
 * `elicitation`, `roots`, `tasks`), as the SEP recommends, unless the client said `!name`.
 * `assigned` (well-formed tags from the MCP-Features header or a profile) fill the axes the
 * client's own declaration leaves open: what a client says of an axis always wins.
 */
export function parseFeatures(
  raw: unknown,
  capabilities: Record<string, unknown> = {},
  extra: FeatureTag[] = [],
  assigned: string[] = [],
): ParsedFeatures {
  const tags: FeatureTag[] = [];
  const accepted: string[] = [];
  const ignored: ParsedFeatures['ignored'] = [];
  const overridden: string[] = [];
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
    if (capabilities[cap] !== undefined && capabilities[cap] !== null && !declaredAbsent.has(cap))
      tags.push({ kind: 'present', name: cap });
  }
  const declaredAxes = new Set(tags.map((t) => t.name));
  for (const raw of assigned.slice(0, 2 * MAX_TAGS)) {
    const t = parseTag(raw);
    if ('invalid' in t) continue; // checked where it was read
    if (declaredAxes.has(t.name)) overridden.push(raw);
    else tags.push(t);
  }
  return { features: new FeatureSet([...tags, ...extra]), accepted, ignored, overridden };
}

/** The longest MCP-Features header read: room for MAX_TAGS tags of a usual length; a longer one is ignored whole. */
export const MAX_FEATURES_HEADER_LENGTH = 4096;
/** Ignored items of a list named one by one, at most (each is a log line); the rest are counted. */
const MAX_IGNORED_NAMED = 8;

export interface ParsedTagList {
  /** Well-formed tags, as written (at most MAX_TAGS). */
  tags: string[];
  ignored: Array<{ tag: string; reason: string }>;
}

/**
 * Parses a comma-separated tag list: the MCP-Features header (`agent, format=json`; repeated
 * headers arrive joined by commas), `--features` and MCP_PROXY_FEATURES. Blank items are
 * skipped; malformed ones are ignored with a reason, as in a client's declaration.
 */
export function parseTagList(value: string): ParsedTagList {
  if (value.length > MAX_FEATURES_HEADER_LENGTH)
    return {
      tags: [],
      ignored: [{ tag: `${value.slice(0, 40)}…`, reason: `longer than ${MAX_FEATURES_HEADER_LENGTH} characters: ignored whole` }],
    };
  const out: ParsedTagList = { tags: [], ignored: [] };
  // Each ignored item is a log line: a few are named, the rest counted.
  let unnamed = 0;
  const ignore = (raw: string, reason: string) =>
    out.ignored.length < MAX_IGNORED_NAMED ? out.ignored.push({ tag: raw.slice(0, MAX_TAG_LENGTH + 8), reason }) : unnamed++;
  for (const item of value.split(',')) {
    const raw = item.trim();
    if (raw === '') continue;
    if (out.tags.length >= MAX_TAGS) {
      ignore(raw, `more than ${MAX_TAGS} tags`);
      continue;
    }
    const tag = parseTag(raw);
    if ('invalid' in tag) ignore(raw, tag.invalid);
    else out.tags.push(raw);
  }
  if (unnamed) out.ignored.push({ tag: '…', reason: `${unnamed} more items ignored (malformed, or more than ${MAX_TAGS} tags)` });
  return out;
}

/** The axis a well-formed tag speaks to: its name (`format` for `format=json` and `format!=xml`, `agent` for `!agent`). */
export function axisOf(raw: string): string | undefined {
  const tag = parseTag(raw);
  return 'invalid' in tag ? undefined : tag.name;
}

/**
 * Tags in layers, the first layer winning: a tag of a lower layer is kept only when no layer
 * above it names its axis. Returns the kept tags and those a layer above overrode.
 */
export function layerTags(layers: string[][]): { tags: string[]; overridden: string[] } {
  const named = new Set<string>();
  const out = { tags: [] as string[], overridden: [] as string[] };
  for (const layer of layers) {
    const axes = layer.map(axisOf);
    layer.forEach((raw, i) => {
      const axis = axes[i];
      if (axis === undefined) return;
      if (named.has(axis)) out.overridden.push(raw);
      else out.tags.push(raw);
    });
    for (const axis of axes) if (axis !== undefined) named.add(axis);
  }
  return out;
}

/**
 * Tags and a variant given to a client beside its own declaration: by its host (the
 * MCP-Features header) and by the operator (a profile). Hints, never permissions: the client's
 * own declaration wins on every axis it names, and a variant it names wins over the profile's.
 */
export interface Assigned {
  /** The tags in effect from both, the header's winning an axis both name. */
  tags: string[];
  /** The profile's variant, for requests that name none. */
  variant?: string;
  /** The profile chosen, and why (`path /mcp/agents`, `principal token:ci`, `client name "…"`, `every client`). */
  profile?: { name: string; why: string };
  /** What the MCP-Features header held: its well-formed tags, and what was ignored (absent when there was no header). */
  header?: ParsedTagList;
}

export const NOTHING_ASSIGNED: Assigned = { tags: [] };
