/**
 * Which profile a client gets, and the tags and variant assigned to it: the MCP-Features header
 * its host sends (HTTP) layered over the profile the operator chose for it (by the endpoint path
 * it connected to, its principal, or its clientInfo.name; else `default`). Built from the config
 * with the filter chain, and again on a reload.
 */
import { DEFAULT_PROFILE, type ProfileConfig } from '../config/schema-profiles.js';
import { declaredSettings } from '../extensions/content-negotiation/filter.js';
import { layerTags, NOTHING_ASSIGNED, parseFeatures, parseTagList, type Assigned } from '../mcp/features.js';
import type { TagsNote } from '../ops/access-log.js';
import { globMatcher, type NameMatcher } from '../rules/glob.js';

/** How a client reached the proxy, as far as choosing its profile goes. */
export interface Arrival {
  /** The authenticated principal ('' without authentication). */
  principal: string;
  /** The endpoint path its request was sent to (HTTP). */
  path?: string;
  /** The MCP-Features header of its request (HTTP). */
  featuresHeader?: string;
  /** clientInfo.name, from initialize or a modern request's `_meta`. */
  clientName?: string;
}

/** Client names are read up to this length: globs are matched in time proportional to it. */
const MAX_CLIENT_NAME = 256;

interface CompiledProfile {
  name: string;
  config: ProfileConfig;
  principals: NameMatcher[];
  clientNames: NameMatcher[];
}

export class Profiles {
  private readonly profiles: CompiledProfile[];
  private readonly byPath = new Map<string, CompiledProfile>();
  private readonly fallback: CompiledProfile | undefined;

  static readonly NONE = new Profiles({});

  constructor(config: Record<string, ProfileConfig>) {
    this.profiles = Object.entries(config).map(([name, p]) => ({
      name,
      config: p,
      principals: p.principals.map(globMatcher),
      clientNames: p.clientNames.map(globMatcher),
    }));
    for (const p of this.profiles) if (p.config.path !== undefined) this.byPath.set(p.config.path, p);
    this.fallback = this.profiles.find((p) => p.name === DEFAULT_PROFILE);
  }

  /** Whether anything may be assigned without a header: a profile with tags or a variant. */
  get empty(): boolean {
    return this.profiles.every((p) => p.config.features.length === 0 && p.config.variant === undefined);
  }

  /** The tags and variant for a client that arrived so, with the profile and why. */
  assign(arrival: Arrival): Assigned {
    const chosen = this.choose(arrival);
    const header = arrival.featuresHeader === undefined ? undefined : parseTagList(arrival.featuresHeader);
    if (!chosen && !header) return NOTHING_ASSIGNED;
    const profileTags = chosen?.profile.config.features ?? [];
    const { tags } = layerTags([header?.tags ?? [], profileTags]);
    return {
      tags,
      ...(chosen?.profile.config.variant !== undefined ? { variant: chosen.profile.config.variant } : {}),
      ...(chosen ? { profile: { name: chosen.profile.name, why: chosen.why } } : {}),
      ...(header ? { header } : {}),
    };
  }

  /** The path profile, else the first by principal, else the first by client name, else `default`. */
  private choose(arrival: Arrival): { profile: CompiledProfile; why: string } | undefined {
    const byPath = arrival.path === undefined ? undefined : this.byPath.get(arrival.path);
    if (byPath) return { profile: byPath, why: `path ${arrival.path}` };
    const principal = arrival.principal;
    const byPrincipal = principal ? this.profiles.find((p) => p.principals.some((matches) => matches(principal))) : undefined;
    if (byPrincipal) return { profile: byPrincipal, why: `principal ${principal}` };
    const clientName = arrival.clientName?.slice(0, MAX_CLIENT_NAME);
    const byName = clientName ? this.profiles.find((p) => p.clientNames.some((matches) => matches(clientName))) : undefined;
    if (byName) return { profile: byName, why: `client name ${JSON.stringify(clientName)}` };
    return this.fallback && { profile: this.fallback, why: 'every client' };
  }
}

/** A client's name as initialize params or a modern `_meta` clientInfo carry it, if it is a string. */
export function clientNameOf(clientInfo: unknown): string | undefined {
  const name = (clientInfo as { name?: unknown } | null | undefined)?.name;
  return typeof name === 'string' && name !== '' ? name.slice(0, MAX_CLIENT_NAME) : undefined;
}

/**
 * The feature tags in effect for a client, as the access log and explain say them: its own
 * declaration layered over what it was assigned, with the profile; undefined when it neither
 * declared the extension nor was assigned anything.
 */
export function tagsInEffect(capabilities: Record<string, unknown>, assigned: Assigned): TagsNote | undefined {
  const { settings } = declaredSettings(capabilities);
  if (!settings && assigned.tags.length === 0 && !assigned.profile) return undefined;
  const parsed = parseFeatures(settings?.features, capabilities, [], assigned.tags);
  return { ...(assigned.profile ? { profile: assigned.profile } : {}), tags: parsed.features.toTags(), overridden: parsed.overridden };
}
