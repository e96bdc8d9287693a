/**
 * The `upstreams` section: several servers behind one endpoint, each named, each with how it is
 * started or reached (as `upstream` has it), the prefix its tools and prompts are listed under,
 * whether readiness waits for it, and content-negotiation rules of its own.
 */
import { z } from 'zod';
import { ruleSchema } from '../rules/compile.js';
import { serverFields } from './schema-upstream.js';

/** A server's name: in prefixes, logs, metrics labels, /healthz and on the command line (`--upstream NAME=SPEC`). */
export const SERVER_NAME = /^[A-Za-z][A-Za-z0-9-]{0,31}$/;

/** What a server's own rules may shape: results that belong to one of its tools or prompts. */
export const SERVER_RULE_METHODS = ['tools/call', 'prompts/get'] as const;

const serverSchema = z
  .object({
    name: z
      .string()
      .regex(SERVER_NAME, 'must start with a letter and hold only letters, digits and "-" (at most 32)')
      .describe('The server\'s name, e.g. "github": its tools are listed as github_<tool> by default.'),
    ...serverFields,
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9-]*$/, 'may hold only letters, digits and "-"')
      .optional()
      .describe(
        'What its tool and prompt names start with, before the separator (default: the name). "" lists them ' +
          'under their own names (one server at most).',
      ),
    required: z
      .boolean()
      .default(true)
      .describe('Readiness (/readyz) waits for this server. false: the endpoint is ready without it, and its calls fail while it is down.'),
    rules: z
      .array(
        ruleSchema.refine((r) => [r.when.method ?? []].flat().every((m) => (SERVER_RULE_METHODS as readonly string[]).includes(m)), {
          message:
            `a server's own rules shape ${SERVER_RULE_METHODS.join(' and ')} only ` +
            "(the methods whose results are one tool's or prompt's)",
          path: ['when', 'method'],
        }),
      )
      .default([])
      .describe(
        "Content-negotiation rules for this server's tools and prompts only: their `when.name` globs are the " +
          'names as the server lists them (without the prefix). They come before contentNegotiation.rules.',
      ),
  })
  .strict()
  .refine((u) => !(u.url && u.command), { message: 'set either `url` or `command`, not both' })
  .refine((u) => u.url || u.command, { message: 'set `url` or `command`: the demo server is for a single upstream' })
  .refine((u) => u.prefix !== '' || u.rules.length === 0, {
    message:
      'a server listed under its own names (prefix "") has no names of its own to scope rules to: ' +
      'give it a prefix, or write the rules in contentNegotiation.rules',
    path: ['rules'],
  });

export type ServerConfig = z.infer<typeof serverSchema>;

export const upstreamsSchema = z
  .array(serverSchema)
  .min(1)
  .superRefine((servers, ctx) => {
    const names = new Map<string, number>();
    const prefixes = new Map<string, string>();
    for (const [i, server] of servers.entries()) {
      const name = server.name.toLowerCase();
      if (names.has(name))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `"${server.name}" names server ${names.get(name)} already` });
      names.set(name, i);
      const prefix = server.prefix ?? server.name;
      const taken = prefixes.get(prefix);
      if (taken !== undefined) {
        const message =
          prefix === ''
            ? `servers "${taken}" and "${server.name}" both list their tools under their own names; give one of them a prefix`
            : `servers "${taken}" and "${server.name}" both have the prefix "${prefix}": their tool names would collide`;
        ctx.addIssue({ code: 'custom', path: [i, 'prefix'], message });
      }
      prefixes.set(prefix, server.name);
    }
  })
  .optional()
  .describe(
    'Several servers behind one endpoint, in the order their tools are listed (instead of `upstream.url` or ' +
      '`upstream.command`; the rest of `upstream` applies to each). See docs/several-servers.md.',
  );

export type UpstreamsConfig = z.infer<typeof upstreamsSchema>;
