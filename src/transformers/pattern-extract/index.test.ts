import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseFeatures } from '../../mcp/features.js';
import { patternExtract } from './index.js';
import { matchTemplate, parseTemplate, type Template } from './template.js';

const log = pino({ level: 'silent' });
const ctx = (method: string, name?: string) => ({
  method,
  name,
  features: parseFeatures(['format=json']).features,
  era: 'legacy' as const,
  log,
});

const WEATHER = [
  '## Current Weather in Bern',
  '',
  'It is currently 8°C in Bern (light rain), feeling like 6°C with the wind. There is a 70% chance of precipitation.',
  '',
  'Humidity: 81%',
].join('\n');

const options = patternExtract.options.parse({
  tool: 'get_weather',
  fields: {
    location: { pattern: '°C in {value} (', type: 'string' },
    temperature_c: { pattern: 'currently {value}°C', type: 'number', unit: '°C' },
    feels_like_c: { pattern: 'feeling like {value}°C', type: 'number' },
    humidity_percent: { pattern: 'Humidity: {value}%', type: 'integer' },
    wind_kmh: { pattern: 'Wind: {value} km/h', type: 'number' },
  },
  required: ['location', 'temperature_c'],
});

describe('pattern-extract', () => {
  const fn = patternExtract.create(options);

  it('turns prose into typed structuredContent, keeps the prose it does not cover, and skips fields it cannot find', async () => {
    const out = (await fn({ content: [{ type: 'text', text: WEATHER }] }, ctx('tools/call', 'get_weather')))!;
    expect(out.structuredContent).toEqual({ location: 'Bern', temperature_c: 8, feels_like_c: 6, humidity_percent: 81 });
    const content = out.content as Array<{ text: string }>;
    expect(JSON.parse(content[0].text)).toEqual(out.structuredContent);
    expect(content[1].text).toBe(WEATHER); // "70% chance" is a fact the data does not hold
  });

  it('leaves results alone that lack a required field, other tools, errors and structured results', async () => {
    expect(await fn({ content: [{ type: 'text', text: 'Humidity: 81%' }] }, ctx('tools/call', 'get_weather'))).toBeUndefined();
    expect(await fn({ content: [{ type: 'text', text: WEATHER }] }, ctx('tools/call', 'plan_journey'))).toBeUndefined();
    expect(await fn({ content: [{ type: 'text', text: WEATHER }], isError: true }, ctx('tools/call', 'get_weather'))).toBeUndefined();
    expect(
      await fn({ content: [{ type: 'text', text: WEATHER }], structuredContent: { a: 1 } }, ctx('tools/call', 'get_weather')),
    ).toBeUndefined();
  });

  it("publishes the fields as the tool's outputSchema in tools/list, unless the upstream declared one", async () => {
    const list = {
      tools: [
        { name: 'get_weather', inputSchema: { type: 'object' } },
        { name: 'other', inputSchema: { type: 'object' } },
      ],
    };
    const out = (await fn(list, ctx('tools/list')))!;
    const tools = out.tools as Array<Record<string, any>>;
    expect(tools[0].outputSchema).toMatchObject({
      type: 'object',
      required: ['location', 'temperature_c'],
      properties: { temperature_c: { type: 'number', description: 'Unit: °C.' }, humidity_percent: { type: 'integer' } },
    });
    expect(tools[1].outputSchema).toBeUndefined();
    expect(
      await fn({ tools: [{ name: 'get_weather', inputSchema: {}, outputSchema: { type: 'object' } }] }, ctx('tools/list')),
    ).toBeUndefined();
  });

  it('refuses templates it cannot match safely, at config load', () => {
    for (const [pattern, message] of [
      ['{value}°C', /must start with text/],
      ['temp {city}{value}', /need text between them/],
      ['no placeholder', /no \{value\}/],
      ['temp {va-lue}', /must be a name/],
      ['temp {value', /unclosed/],
    ] as const) {
      const parsed = patternExtract.options.safeParse({ tool: 't', fields: { f: { pattern } } });
      expect(parsed.success).toBe(false);
      expect(JSON.stringify(parsed.error!.issues)).toMatch(message);
    }
  });

  it('takes a regular expression with a named group "value" instead, matched by RE2 in linear time', async () => {
    const regex = patternExtract.create(
      patternExtract.options.parse({
        tool: 'get_weather',
        fields: {
          temperature_c: { regex: 'currently (?<value>-?\\d+(?:\\.\\d+)?)\\s*°C', type: 'number' },
          chance_percent: { regex: '(?P<value>\\d+)% chance', type: 'integer' },
        },
      }),
    );
    const out = (await regex({ content: [{ type: 'text', text: WEATHER }] }, ctx('tools/call', 'get_weather')))!;
    expect(out.structuredContent).toEqual({ temperature_c: 8, chance_percent: 70 });
    // The classic catastrophic pattern on a megabyte of "a" with no match: a backtracking
    // engine would not finish within the test's timeout; RE2 answers at once.
    const slow = patternExtract.create(patternExtract.options.parse({ tool: 't', fields: { f: { regex: '(?<value>(a+)+)b' } } }));
    expect(await slow({ content: [{ type: 'text', text: 'a'.repeat(1 << 20) }] }, ctx('tools/call', 't'))).toBeUndefined();
  });

  it('refuses regular expressions RE2 cannot run or that name no value, and fields with both or neither', () => {
    for (const [f, message] of [
      [{ regex: '(?<value>a)\\1' }, /RE2 accepts/],
      [{ regex: '(?=a)(?<value>b)' }, /RE2 accepts/],
      [{ regex: '(\\d+)°C' }, /needs a named group/],
      [{ regex: '(?<value>x)', pattern: 'x {value}' }, /either pattern or regex/],
      [{ type: 'number' }, /either pattern or regex/],
    ] as const) {
      const parsed = patternExtract.options.safeParse({ tool: 't', fields: { f } });
      expect(parsed.success).toBe(false);
      expect(JSON.stringify(parsed.error!.issues)).toMatch(message);
    }
  });
});

describe('templates', () => {
  const t = (s: string) => parseTemplate(s) as Template;

  it('matches on one line, with other placeholders as wildcards', () => {
    expect(matchTemplate(t('temperature in {city}: {value}°C'), 'The temperature in Bern: 8°C today')).toBe('8');
    expect(matchTemplate(t('temperature in {city}: {value}°C'), 'The temperature in Bern\n: 8°C')).toBeUndefined();
    expect(matchTemplate(t('Wind: {value}'), 'Wind: 12 km/h from NW\nnext')).toBe('12 km/h from NW');
  });

  it('stays linear when the first literal occurs everywhere and the rest never does', () => {
    const text = 'temperature in '.repeat(20_000);
    expect(matchTemplate(t('temperature in {city}: {value}°C'), text)).toBeUndefined();
  });
});
