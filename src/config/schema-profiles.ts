/**
 * The `profiles` section of the configuration: feature tags and a variant the operator assigns
 * to clients that cannot declare them (hosts that send no content-negotiation extension), chosen
 * per principal, per client name or per endpoint path; `default` applies to every other client
 * (`--features` sets its tags). Tags are hints and a variant a view: neither is a permission.
 * What needs the rest of the config (variant ids, listen.path) is checked by `profileProblems`.
 */
import { z } from 'zod';
import { MAX_TAGS, parseTag } from '../mcp/features.js';

/** The profile that applies to every client no other profile is chosen for. */
export const DEFAULT_PROFILE = 'default';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** Endpoint paths: plain segments, no dot segments, no query, nothing the router would decode. */
const PATH = /^(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$/;
/** Globs over principals and client names, at most. */
const MAX_GLOBS = 64;
const MAX_GLOB_LENGTH = 200;

const tag = z.string().superRefine((raw, ctx) => {
  const parsed = parseTag(raw);
  if ('invalid' in parsed)
    ctx.addIssue({
      code: 'custom',
      message: `"${raw}" is not a feature tag (${parsed.invalid}); write agent, !interactive, format=json or format!=xml`,
    });
});
const globs = (what: string) => z.array(z.string().min(1).max(MAX_GLOB_LENGTH)).max(MAX_GLOBS).default([]).describe(what);

export const profileSchema = z
  .object({
    features: z
      .array(tag)
      .max(MAX_TAGS, `at most ${MAX_TAGS} tags`)
      .default([])
      .describe(
        'Feature tags its clients get, on the axes their own declaration leaves ' +
          "open (a client's own tag of an axis wins, and so does the MCP-Features header); " +
          "same grammar as a client's: agent, !interactive, format=json.",
      ),
    variant: z
      .string()
      .optional()
      .describe(
        'A serverVariants.variants id: the variant its clients are served in when a request names none (in ' +
          '_meta or MCP-Server-Variant); ranked first for clients that declare the server-variants extension.',
      ),
    principals: globs('Chosen for these principals (globs, * and ?): token:<auth.tokens name>, or jwt:<the principal claim>.'),
    clientNames: globs(
      'Chosen for clients whose clientInfo.name matches one of these globs (e.g. ' +
        '"claude-ai", "Visual Studio Code*"); a hint the client sends, not an identity.',
    ),
    path: z
      .string()
      .regex(PATH, 'a path such as /mcp/agents: segments of letters, digits, ".", "_", "~" and "-", no ".." and no trailing "/"')
      .optional()
      .describe(
        'An MCP endpoint of its own (e.g. /mcp/agents), beside listen.path: ' +
          'clients that connect there get this profile. HTTP only; a change takes a restart.',
      ),
  })
  .strict();

export type ProfileConfig = z.infer<typeof profileSchema>;

export const profilesSchema = z
  .record(z.string(), profileSchema)
  .superRefine((profiles, ctx) => {
    for (const name of Object.keys(profiles)) {
      if (!NAME.test(name))
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message:
            `"${name.slice(0, 80)}" is not a profile name: letters, digits, ` +
            '".", "_" and "-", at most 64, starting with a letter or digit',
        });
    }
  })
  .default({})
  .describe(
    'Named profiles: feature tags and a variant for clients that cannot declare them. One profile applies ' +
      'to a client: the one whose path it connected to, else the first whose principals match, else the first ' +
      `whose clientNames match, else "${DEFAULT_PROFILE}" (every other client; --features sets its tags).`,
  );

/** What the rest of the config says about profiles: each problem with its key path. */
export interface ProfileContext {
  listenPath: string;
  variantIds: string[];
}

/** Problems a profile has with the rest of the config, as [key path, message]. */
export function profileProblems(profiles: Record<string, ProfileConfig>, o: ProfileContext): Array<[Array<string | number>, string]> {
  const problems: Array<[Array<string | number>, string]> = [];
  const paths = new Map<string, string>();
  for (const [name, p] of Object.entries(profiles)) {
    const at = (...key: Array<string | number>) => ['profiles', name, ...key];
    if (p.variant !== undefined && !o.variantIds.includes(p.variant)) {
      const known = o.variantIds.length ? `the variants are ${o.variantIds.join(', ')}` : 'serverVariants.variants is empty';
      problems.push([at('variant'), `no variant "${p.variant}" (${known}); name one of serverVariants.variants, or leave variant out`]);
    }
    const selectors = p.principals.length + p.clientNames.length + (p.path === undefined ? 0 : 1);
    if (name === DEFAULT_PROFILE && selectors > 0) {
      problems.push([
        at(),
        `the "${DEFAULT_PROFILE}" profile applies to every client no other profile is chosen for: ` +
          'move principals, clientNames and path to a profile of another name',
      ]);
    } else if (name !== DEFAULT_PROFILE && selectors === 0) {
      problems.push([
        at(),
        'no principals, clientNames or path: no client would get this profile; add one, or name it "default" to give it to every client',
      ]);
    }
    if (p.path === undefined) continue;
    if (p.path === o.listenPath)
      problems.push([
        at('path'),
        `${p.path} is listen.path, the main endpoint; give the profile a path of its own (e.g. ${o.listenPath}/${name})`,
      ]);
    else if (p.path.startsWith('/.well-known/') || p.path === '/healthz' || p.path === '/readyz' || p.path === '/metrics')
      problems.push([at('path'), `${p.path} is taken by the proxy's own routes; pick another path`]);
    else if (paths.has(p.path))
      problems.push([at('path'), `${p.path} is the path of profile "${paths.get(p.path)}" too; each profile needs its own`]);
    paths.set(p.path, name);
  }
  return problems;
}
