/**
 * `pattern-extract`: data out of prose, by sentence templates (SEP content negotiation's headline
 * case). Each field names a template (`"currently {value}°C in"`) and a type; for tools/call the
 * fields found become `structuredContent` (numbers typed), with a JSON text copy and the prose
 * kept beside it when the data does not cover every fact. For tools/list it publishes the
 * fields as the tool's `outputSchema`, so clients know the shape before they call. Templates
 * are checked at config load and matched in linear time (see template.ts); a field may give a
 * regular expression instead, run by RE2JS, whose automaton matches in linear time by design
 * (RE2 has no backreferences or lookaround: such a pattern is refused at load).
 */
import { z } from 'zod';
import type { McpResult, Transformer } from '../contract.js';
import { satisfiesSchema } from '../_shared/schema-check.js';
import { toolText, withStructured } from '../_shared/structured-result.js';
import { RE2JS } from 're2js';
import { matchTemplate, parseTemplate } from './template.js';

const field = z
  .object({
    pattern: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Text around the value, with {value} where it is: "currently {value}°C in {city}"; other {names} match anything on the line.',
      ),
    regex: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Instead of pattern: a regular expression (RE2 syntax, matched in linear time) with a named group "value": "(?<value>-?\\d+)°C".',
      ),
    type: z.enum(['number', 'integer', 'string', 'boolean']).default('string'),
    unit: z.string().optional().describe('The unit the number is in (published in the schema).'),
    description: z.string().optional(),
  })
  .strict()
  .refine((f) => (f.pattern === undefined) !== (f.regex === undefined), 'give either pattern or regex');

const options = z
  .object({
    /** The tool whose results these are: its tools/list entry gets the outputSchema. */
    tool: z.string().min(1),
    fields: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/), field)
      .refine((f) => Object.keys(f).length > 0, 'at least one field'),
    /** Fields that must be found; without them the result is left as it was. */
    required: z.array(z.string()).default([]),
    keepText: z.boolean().default(true),
  })
  .strict()
  .superRefine((o, ctx) => {
    for (const [name, f] of Object.entries(o.fields)) {
      const made = matcherOf(f);
      if (typeof made === 'string')
        ctx.addIssue({ code: 'custom', path: ['fields', name, f.regex === undefined ? 'pattern' : 'regex'], message: made });
    }
    for (const name of o.required)
      if (!(name in o.fields)) ctx.addIssue({ code: 'custom', path: ['required'], message: `"${name}" is not one of the fields` });
  });

type Options = z.infer<typeof options>;

export const patternExtract: Transformer<Options> = {
  name: 'pattern-extract',
  description:
    'Turn prose into structuredContent with sentence templates per field ("currently {value}°C"), ' +
    "typed; publishes the fields as the tool's outputSchema in tools/list.",
  options,
  example: {
    tool: 'x',
    fields: {
      temperature_c: { pattern: 'currently {value}°C', type: 'number', unit: '°C' },
      location: { pattern: '°C in {value} (', type: 'string' },
      humidity_percent: { pattern: 'Humidity: {value}%', type: 'number' },
    },
  },
  create(o) {
    const matchers = new Map(Object.entries(o.fields).map(([name, f]) => [name, matcherOf(f) as Matcher]));
    const schema = outputSchemaOf(o);
    return function patternExtractFn(result, ctx) {
      if (ctx.method === 'tools/list') return publishSchema(result, o.tool, schema);
      const from = ctx.method === 'tools/call' && ctx.name === o.tool ? toolText(result) : undefined;
      if (!from) return undefined;
      const data: Record<string, unknown> = {};
      for (const [name, match] of matchers) {
        ctx.budget?.checkNow();
        const raw = match(from.text);
        const value = raw === undefined ? undefined : typed(raw, o.fields[name].type);
        if (value !== undefined) data[name] = value;
      }
      if (Object.keys(data).length === 0 || o.required.some((name) => !(name in data))) return undefined;
      // The schema the client was shown is this transformer's own unless the upstream declared one (a wrapped text's, say).
      if (ctx.outputSchema && !satisfiesSchema(data, ctx.outputSchema)) return undefined;
      return withStructured(result, from, data, o.keepText, ctx.budget);
    };
  },
};

/** Finds a field's raw text in a result's text. */
type Matcher = (text: string) => string | undefined;

/** The field's template or regular expression, ready to match; a string says what is wrong with it. */
function matcherOf(f: { pattern?: string; regex?: string }): Matcher | string {
  if (f.pattern !== undefined) {
    const template = parseTemplate(f.pattern);
    return typeof template === 'string' ? template : (text) => matchTemplate(template, text);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(f.regex ?? '');
  } catch (err) {
    return `not a regular expression RE2 accepts (no backreferences or lookaround): ${(err as Error).message}`;
  }
  if (!re.namedGroups().value) return 'needs a named group "value": (?<value>…)';
  return (text) => {
    const m = re.matcher(text);
    return m.find() ? (m.group('value') ?? undefined) : undefined;
  };
}

/** The raw text as the field's type; undefined when it is not one (a "number" that is not). */
function typed(raw: string, type: Options['fields'][string]['type']): unknown {
  if (type === 'string') return raw === '' ? undefined : raw;
  if (type === 'boolean') return /^(yes|true|on)$/i.test(raw) ? true : /^(no|false|off)$/i.test(raw) ? false : undefined;
  const m = /^[-+−]?\d+(?:[.,]\d+)?/.exec(raw.replace(/^\s+/, ''));
  if (!m) return undefined;
  const n = Number(m[0].replace('−', '-').replace(',', '.'));
  if (!Number.isFinite(n)) return undefined;
  return type === 'integer' ? (Number.isInteger(n) ? n : undefined) : n;
}

function outputSchemaOf(o: Options): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(o.fields)) {
    const description = [f.description, f.unit ? `Unit: ${f.unit}.` : undefined].filter(Boolean).join(' ');
    properties[name] = { type: f.type, ...(description ? { description } : {}) };
  }
  return { type: 'object', properties, ...(o.required.length ? { required: o.required } : {}) };
}

/** tools/list with the tool's outputSchema filled in, unless the upstream declared one. */
function publishSchema(result: McpResult, tool: string, schema: Record<string, unknown>): McpResult | undefined {
  if (!Array.isArray(result.tools)) return undefined;
  let changed = false;
  const tools = result.tools.map((t: Record<string, unknown>) => {
    if (t?.name !== tool || t.outputSchema !== undefined) return t;
    changed = true;
    return { ...t, outputSchema: schema };
  });
  return changed ? { ...result, tools } : undefined;
}
