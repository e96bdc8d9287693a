/**
 * Tool definitions pinned (the defence against a server that changes a tool after it was
 * trusted): the first definition of each tool the upstream lists is pinned as a digest (sha256
 * of the canonical JSON of what a model reads and a call depends on: name, title, description,
 * inputSchema, outputSchema, annotations, execution; `_meta` is left out: it is for hosts, not
 * models, and servers put per-listing values there, which would make every listing a change).
 * A later listing that shows another definition is a change: logged (at most LOG_PER_MINUTE a
 * minute), counted, and by `upstream.toolChanges` allowed (the new digest pinned in its place),
 * announced (the same, and clients told with notifications/tools/list_changed) or refused (the
 * old digest stays pinned, the tool is no longer listed and its calls are refused until an
 * operator accepts the new digest in the pins file and reloads).
 *
 * A refusal holds until the operator acts, whatever later listings show: sessions with upstream
 * processes of their own may list the old definition beside one that serves the new.
 *
 * Pins are optionally kept in a JSON file (`upstream.toolPins`), written whole and atomically
 * (a temporary file renamed), at most once a second. The file is the operator's too: `pins
 * accept` rewrites it, so before each write and on a reload what someone else changed in it
 * since the proxy last read or wrote it is taken over (a three-way merge per tool).
 *
 * Bounded: at most MAX_PINS tools and MAX_BYTES (names and digests); tools beyond are not pinned
 * (never evicted: a server must not unpin a tool by listing decoys first). A server that changes
 * on every listing replaces one digest per tool, so neither memory nor the file grows.
 */
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { canonicalJson } from '../jsonrpc/canonical.js';
import { ProxyError } from '../jsonrpc/errors.js';
import { isObject, type JsonRpcNotification } from '../jsonrpc/message.js';
import type { McpResult } from '../transformers/contract.js';

export type ToolChanges = 'allow' | 'announce' | 'refuse';

/** What clients are told when a change is announced. */
export const TOOLS_LIST_CHANGED: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };

/** Tools pinned, at most. */
export const MAX_PINS = 10_000;
/** Bytes of pins kept (a tool's name and what its digests take), at most. */
export const MAX_BYTES = 4 * 1024 * 1024;
/** What one pin costs beside its name: two digests and the object holding them. */
const PIN_BYTES = 160;
/** Changes logged one by one in a minute; beyond, they are counted and the next warning says how many were not logged. */
const LOG_PER_MINUTE = 20;
/** Least time between two writes of the file, and between two announcements to clients. */
const WRITE_INTERVAL_MS = 1000;
const ANNOUNCE_INTERVAL_MS = 1000;
/** The members of a tool that are pinned. */
const PINNED_MEMBERS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', 'execution'] as const;
const DIGEST = /^[0-9a-f]{64}$/;
/** Pages remembered as unchanged, at most (the set starts again beyond). */
const MAX_UNCHANGED_PAGES = 256;
const FILE_VERSION = 1;

/** One tool's entry: the digest pinned, and the digest of a changed definition refused until accepted. */
export interface Pin {
  sha256: string;
  refused?: string;
}

/** The pins file: `{ "version": 1, "tools": { "<name>": { "sha256": "…", "refused": "…" } } }`. */
export type PinEntries = Map<string, Pin>;

/** The digest of a tool's definition (hex sha256 of the canonical JSON of its pinned members). */
export function toolDigest(tool: Record<string, unknown>): string {
  const pinned: Record<string, unknown> = {};
  for (const key of PINNED_MEMBERS) if (tool[key] !== undefined) pinned[key] = tool[key];
  return createHash('sha256').update(canonicalJson(pinned)).digest('hex');
}

/** The first characters of a digest, as logs and messages show it. */
export const short = (digest: string): string => digest.slice(0, 12);

/** A pins file's entries and text (none for a missing file); throws PinsFileError when it cannot be used. */
export function readPins(file: string): { entries: PinEntries; text: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: new Map(), text: '' };
    throw new PinsFileError(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return { entries: parsePins(file, text), text };
}

/** The text of a pins file holding `entries` (names sorted, one tool a line). */
export function pinsText(entries: PinEntries): string {
  const names = [...entries.keys()].sort();
  const lines = names.map((name) => `    ${JSON.stringify(name)}: ${JSON.stringify(entries.get(name))}`);
  return `{\n  "version": ${FILE_VERSION},\n  "tools": {\n${lines.join(',\n')}${lines.length ? '\n' : ''}  }\n}\n`;
}

/** Writes `text` to `file` whole: a reader sees the old file or the new one, never a part. */
export function writeAtomically(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, file);
}

/** A pins file that cannot be used: the message names the file, what is wrong, and what to do. */
export class PinsFileError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: the tool pins file ${problem}; fix or delete it (a missing file starts empty)`);
  }
}

function parsePins(file: string, text: string): PinEntries {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new PinsFileError(file, `is not JSON (${(err as Error).message})`);
  }
  if (!isObject(raw) || raw.version !== FILE_VERSION || !isObject(raw.tools))
    throw new PinsFileError(file, `is not a pins file: expected {"version": ${FILE_VERSION}, "tools": {…}}`);
  const entries: PinEntries = new Map();
  let bytes = 0;
  for (const [name, entry] of Object.entries(raw.tools)) {
    const sha256 = isObject(entry) ? entry.sha256 : undefined;
    const refused = isObject(entry) ? entry.refused : undefined;
    if (
      typeof sha256 !== 'string' ||
      !DIGEST.test(sha256) ||
      (refused !== undefined && (typeof refused !== 'string' || !DIGEST.test(refused)))
    )
      throw new PinsFileError(
        file,
        `has a bad entry for tool ${JSON.stringify(name.slice(0, 100))}: ` +
          'expected {"sha256": "<64 hex digits>", "refused"?: "<64 hex digits>"}',
      );
    bytes += name.length + PIN_BYTES;
    if (entries.size >= MAX_PINS || bytes > MAX_BYTES)
      throw new PinsFileError(file, `holds more than ${MAX_PINS} tools or ${MAX_BYTES} bytes`);
    entries.set(name, refused === undefined || refused === sha256 ? { sha256 } : { sha256, refused });
  }
  return entries;
}

export interface ToolPinsOptions {
  mode: ToolChanges;
  /** Where pins are kept (absent: in memory only). */
  file?: string;
  log: Logger;
  /** Counted per mode that handled a change (for /metrics). */
  counters?: { toolDefinitionChanges: Partial<Record<ToolChanges, number>> };
  /** The clock (ms), for tests. */
  now?: () => number;
}

export class ToolPins {
  private pins: PinEntries;
  private bytes = 0;
  private refusedCount = 0;
  /** The file as the proxy last read or wrote it: what someone else changed since is theirs. */
  private fileText = '';
  private dirty = false;
  private lastWrite = -Infinity;
  private writeTimer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<() => void>();
  private lastAnnounce = -Infinity;
  private announceTimer: NodeJS.Timeout | undefined;
  private readonly logged = { windowStart: -Infinity, count: 0, notLogged: 0 };
  private fullNoted = false;
  /** Bumped by every change of the pins: pages seen before it are read again after it. */
  private state = 0;
  /** Keys of pages whose every tool was as pinned when last seen, since the pins last changed (see pageKey). */
  private readonly unchanged = new Set<string>();
  private readonly now: () => number;

  /** Loads the pins file (throws PinsFileError when it cannot be used; a missing file starts empty). */
  constructor(private readonly o: ToolPinsOptions) {
    this.now = o.now ?? (() => performance.now());
    const { entries, text } = o.file ? readPins(o.file) : { entries: new Map<string, Pin>(), text: '' };
    this.fileText = text;
    this.pins = entries;
    this.recount();
  }

  get mode(): ToolChanges {
    return this.o.mode;
  }

  /** Tools pinned, and those whose calls are refused now. */
  get size(): { pinned: number; refused: number } {
    return { pinned: this.pins.size, refused: this.refusedCount };
  }

  /** The tools of a listed page (anything else is skipped): the new ones pinned, changes handled as `mode` says. */
  see(tools: unknown[]): void {
    // A page listed again as it was costs one serialization, not a canonical form and a digest per tool.
    const page = pageKey(tools);
    if (page !== undefined && this.unchanged.has(page)) return;
    const before = this.state;
    let changed = false;
    for (const tool of tools) {
      if (!isObject(tool) || typeof tool.name !== 'string') continue;
      const name = tool.name;
      const digest = toolDigest(tool);
      const pin = this.pins.get(name);
      if (!pin) {
        this.pin(name, digest);
        continue;
      }
      if (pin.sha256 === digest || pin.refused === digest) continue; // a refusal holds until the operator acts
      this.note(name, pin, digest);
      this.state++;
      if (this.o.mode === 'refuse') {
        if (!pin.refused) this.refusedCount++;
        pin.refused = digest;
      } else pin.sha256 = digest;
      this.dirty = changed = true;
    }
    if (this.dirty) this.scheduleWrite();
    if (changed && this.o.mode !== 'allow') this.announce();
    if (page === undefined) return;
    if (this.state !== before) this.unchanged.clear();
    if (this.unchanged.size >= MAX_UNCHANGED_PAGES) this.unchanged.clear();
    this.unchanged.add(page);
  }

  /** The refusal of a call to `name`, or undefined when it may go on. */
  refusal(name: unknown): ProxyError | undefined {
    if (this.refusedCount === 0 || typeof name !== 'string') return undefined;
    const pin = this.pins.get(name);
    if (!pin?.refused) return undefined;
    return new ProxyError(
      'TOOL_CHANGED',
      `Tool "${name.slice(0, 200)}" is refused: its definition changed since it was pinned (${short(pin.sha256)} → ` +
        `${short(pin.refused)}). The proxy's operator accepts the new definition with ` +
        `"mcp-negotiate-proxy pins accept ${JSON.stringify(name.slice(0, 200))} --config <file>", then reloads the proxy (SIGHUP)`,
      { tool: name, pinned: pin.sha256, refused: pin.refused },
    );
  }

  /** A tools/list result without the tools whose calls are refused, or undefined when it lists none. */
  unlisted(result: McpResult): McpResult | undefined {
    const tools = result.tools;
    if (this.refusedCount === 0 || !Array.isArray(tools)) return undefined;
    const kept = tools.filter((t: unknown) => !(isObject(t) && typeof t.name === 'string' && this.pins.get(t.name)?.refused));
    return kept.length === tools.length ? undefined : { ...result, tools: kept };
  }

  /** Calls `listener` (not at once: after the listing that showed a change) when clients are to be told the tool list changed. */
  onAnnounce(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads the file again (a reload): what the operator changed in it is taken over. Throws PinsFileError when it cannot be used. */
  reload(): void {
    if (!this.o.file) return;
    const theirs = readPins(this.o.file);
    const before = this.refusedCount;
    this.merge(theirs.entries, theirs.text);
    if (this.dirty) this.scheduleWrite();
    // A tool accepted (or dropped) is listed again: clients that were told it went away are told it is back.
    if (this.refusedCount !== before && this.o.mode !== 'allow') this.announce();
  }

  /** Writes what is not written yet, and stops the timers (the proxy is closing). */
  close(): void {
    clearTimeout(this.announceTimer);
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    if (this.dirty) this.write();
  }

  private pin(name: string, digest: string): void {
    const bytes = name.length + PIN_BYTES;
    if (this.pins.size >= MAX_PINS || this.bytes + bytes > MAX_BYTES) {
      if (!this.fullNoted)
        this.o.log.warn(
          { tool: name.slice(0, 200), max: MAX_PINS, maxBytes: MAX_BYTES },
          'tool pins full: this tool and later new ones are not pinned',
        );
      this.fullNoted = true;
      return;
    }
    this.pins.set(name, { sha256: digest });
    this.state++;
    this.bytes += bytes;
    this.dirty = true;
  }

  /** Counts a change, and logs it unless LOG_PER_MINUTE were logged this minute (then the next one logged says how many were not). */
  private note(name: string, pin: Pin, digest: string): void {
    const { mode, counters, log } = this.o;
    if (counters) counters.toolDefinitionChanges[mode] = (counters.toolDefinitionChanges[mode] ?? 0) + 1;
    const now = this.now();
    const l = this.logged;
    if (now - l.windowStart >= 60_000) {
      l.windowStart = now;
      l.count = 0;
    }
    if (l.count >= LOG_PER_MINUTE) {
      l.notLogged++;
      return;
    }
    l.count++;
    const notLogged = l.notLogged || undefined;
    l.notLogged = 0;
    const action = mode === 'refuse' ? 'calls refused until accepted' : mode === 'announce' ? 'pinned anew; clients told' : 'pinned anew';
    log.warn(
      { tool: name.slice(0, 200), pinned: short(pin.refused ?? pin.sha256), now: short(digest), mode, notLogged },
      `tool definition changed: ${action}`,
    );
  }

  private announce(): void {
    if (this.announceTimer) return;
    const wait = Math.max(0, this.lastAnnounce + ANNOUNCE_INTERVAL_MS - this.now());
    this.announceTimer = setTimeout(() => {
      this.announceTimer = undefined;
      this.lastAnnounce = this.now();
      for (const listener of [...this.listeners]) {
        try {
          listener();
        } catch (err) {
          this.o.log.error({ err: (err as Error).message }, 'could not tell a client that the tool list changed');
        }
      }
    }, wait);
    this.announceTimer.unref();
  }

  private scheduleWrite(): void {
    if (!this.o.file || this.writeTimer) return;
    const wait = Math.max(0, this.lastWrite + WRITE_INTERVAL_MS - this.now());
    this.writeTimer = setTimeout(() => {
      this.writeTimer = undefined;
      this.write();
    }, wait);
    this.writeTimer.unref();
  }

  /** Takes over what someone else changed in the file since it was last read or written, then writes it whole. */
  private write(): void {
    const file = this.o.file!;
    this.lastWrite = this.now();
    try {
      const theirs = readPins(file);
      if (theirs.text !== this.fileText) this.merge(theirs.entries, theirs.text);
      const text = pinsText(this.pins);
      writeAtomically(file, text);
      this.fileText = text;
      this.dirty = false;
    } catch (err) {
      // Nothing is lost: the pins stay in memory, and the next change tries again.
      this.o.log.error({ file, err: (err as Error).message }, 'could not write the tool pins file; pins are kept in memory');
    }
  }

  /**
   * Per tool, a three-way merge of the file as the proxy last had it (`base`), as it is now (`theirs`) and the
   * pins in memory (`mine`): where theirs differs from base, theirs wins (an operator accepted, rejected or
   * deleted), except a refusal recorded here since, which stays unless theirs accepts that very digest.
   */
  private merge(theirs: PinEntries, text: string): void {
    let base: PinEntries;
    try {
      base = this.fileText ? parsePins(this.o.file!, this.fileText) : new Map();
    } catch {
      base = new Map();
    }
    const next: PinEntries = new Map();
    for (const name of new Set([...this.pins.keys(), ...theirs.keys(), ...base.keys()])) {
      const b = base.get(name);
      const t = theirs.get(name);
      const m = this.pins.get(name);
      let pin: Pin | undefined;
      if (samePin(t, b)) pin = m;
      else if (t) {
        const refused = m?.refused && m.refused !== b?.refused ? m.refused : t.refused;
        pin = refused && refused !== t.sha256 ? { sha256: t.sha256, refused } : { sha256: t.sha256 };
      }
      if (pin) next.set(name, this.o.mode === 'refuse' || !pin.refused ? pin : { sha256: pin.sha256 });
    }
    this.fileText = text;
    this.pins = next;
    this.state++;
    this.unchanged.clear();
    this.dirty = this.dirty || pinsText(next) !== pinsText(theirs);
    this.recount();
  }

  private recount(): void {
    this.bytes = 0;
    this.refusedCount = 0;
    for (const [name, pin] of this.pins) {
      this.bytes += name.length + PIN_BYTES;
      if (pin.refused && this.o.mode !== 'refuse') delete pin.refused;
      if (pin.refused) this.refusedCount++;
    }
  }
}

/** A page's tools as their JSON's sha256 (undefined for tools that cannot be serialized: they are read one by one). */
function pageKey(tools: unknown[]): string | undefined {
  try {
    return createHash('sha256').update(JSON.stringify(tools)).digest('base64');
  } catch {
    return undefined;
  }
}

function samePin(a: Pin | undefined, b: Pin | undefined): boolean {
  return a?.sha256 === b?.sha256 && a?.refused === b?.refused;
}
