/**
 * A small *legacy* MCP server ("weather/journey demo") that answers in prose, like the "current
 * approach" examples of the content-negotiation SEP. It knows nothing about negotiation; the proxy
 * sits in front of it. All output is deterministic (derived from the arguments only: no clock, no
 * randomness, no network).
 *
 * Tools:     get_weather {city}, plan_journey {from, to, date}, convert_units {value, from, to}
 * Resources: demo://cities (JSON), demo://guide (markdown), template demo://weather/{city} (JSON)
 * Prompts:   trip_briefing {destination, days?}
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export const DEMO_CITIES: ReadonlyArray<{ name: string; country: string; elevation_m: number }> = [
  { name: 'Bern', country: 'CH', elevation_m: 540 },
  { name: 'Zurich', country: 'CH', elevation_m: 408 },
  { name: 'Geneva', country: 'CH', elevation_m: 375 },
  { name: 'Basel', country: 'CH', elevation_m: 260 },
  { name: 'Lausanne', country: 'CH', elevation_m: 495 },
  { name: 'Lucerne', country: 'CH', elevation_m: 435 },
  { name: 'Lugano', country: 'CH', elevation_m: 273 },
  { name: 'Zermatt', country: 'CH', elevation_m: 1608 },
  { name: 'Milan', country: 'IT', elevation_m: 120 },
  { name: 'Paris', country: 'FR', elevation_m: 35 },
];

const CONDITIONS = ['sunny', 'mostly sunny', 'partly cloudy', 'mostly cloudy', 'overcast', 'light rain', 'showers', 'fog', 'light snow'];
const WET = new Set(['light rain', 'showers', 'light snow']);
const COMPASS = ['N', 'NE', 'E', 'SE', 'S', 'SW', 'W', 'NW'];
const DAYS = ['Today', 'Tomorrow', 'Day after tomorrow'];
const HUBS = ['Olten', 'Bern', 'Zurich', 'Arth-Goldau', 'Bellinzona', 'Lausanne', 'Basel'];

/** FNV-1a 32-bit hash: the only source of "variation" in this server. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (const ch of text) {
    h ^= ch.codePointAt(0)!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Snow only when it is cold, rain only when it is not freezing. */
function plausible(conditions: string, temperature: number): string {
  if (conditions === 'light snow' && temperature > 2) return 'light rain';
  if ((conditions === 'light rain' || conditions === 'showers') && temperature <= 0) return 'light snow';
  return conditions;
}

/** Canonical display name: a known city's spelling, else the trimmed input with a capital initial. */
function cityName(input: string): string {
  const t = input.trim();
  const known = DEMO_CITIES.find((c) => c.name.toLowerCase() === t.toLowerCase());
  return known ? known.name : t.charAt(0).toUpperCase() + t.slice(1);
}

export interface DemoWeather {
  location: string;
  temperature_c: number;
  feels_like_c: number;
  conditions: string;
  humidity_percent: number;
  precipitation_probability: number;
  wind_speed_kmh: number;
  wind_direction: string;
  uv_index: number;
  forecast: Array<{ day: string; high_c: number; low_c: number; conditions: string }>;
}

export function weatherFor(city: string): DemoWeather {
  const location = cityName(city);
  const h = hash(location.toLowerCase());
  const temperature = (h % 31) - 5; // -5 .. 25 °C
  const wind = (h >>> 5) % 41; // 0 .. 40 km/h
  const conditions = plausible(CONDITIONS[(h >>> 11) % CONDITIONS.length], temperature);
  const trend = ((h >>> 29) % 5) - 2; // -2 .. +2 °C per day
  const forecast = DAYS.map((day, i) => {
    const d = hash(`${location.toLowerCase()}#${i}`);
    const high = temperature + i * trend + (d % 3);
    return { day, high_c: high, low_c: high - 5 - ((d >>> 3) % 5), conditions: plausible(CONDITIONS[(d >>> 7) % CONDITIONS.length], high) };
  });
  return {
    location,
    temperature_c: temperature,
    feels_like_c: temperature - Math.round(wind / 8),
    conditions,
    humidity_percent: 30 + ((h >>> 15) % 66),
    precipitation_probability: ((WET.has(conditions) ? 6 : 0) + ((h >>> 19) % 5)) / 10,
    wind_speed_kmh: wind,
    wind_direction: COMPASS[(h >>> 23) % COMPASS.length],
    uv_index: (h >>> 26) % 9,
    forecast,
  };
}

function weatherProse(w: DemoWeather): string {
  const trend =
    w.forecast[2].high_c > w.temperature_c
      ? 'a gradual warming trend'
      : w.forecast[2].high_c < w.temperature_c
        ? 'a slow cooling trend'
        : 'steady temperatures';
  const advice =
    w.precipitation_probability >= 0.5 ? 'Take an umbrella.' : w.temperature_c < 5 ? 'Dress in warm layers.' : 'A light jacket should do.';
  return [
    `## Current Weather in ${w.location}`,
    '',
    `It is currently ${w.temperature_c}°C in ${w.location} (${w.conditions}), feeling like ${w.feels_like_c}°C with the wind. ` +
      `There is a ${Math.round(w.precipitation_probability * 100)}% chance of precipitation ` +
      `in the next few hours, and the forecast shows ${trend} over the coming days.`,
    '',
    `Temperature: ${w.temperature_c}°C`,
    `Conditions: ${w.conditions}`,
    `Humidity: ${w.humidity_percent}%`,
    `Wind: ${w.wind_speed_kmh} km/h from ${w.wind_direction}`,
    `UV index: ${w.uv_index}`,
    '',
    '### 3-day forecast',
    '',
    '| Day | High | Low | Conditions |',
    '|---|---|---|---|',
    ...w.forecast.map((f) => `| ${f.day} | ${f.high_c}°C | ${f.low_c}°C | ${f.conditions} |`),
    '',
    `This is typical weather for ${w.location} at this time of year. ${advice}`,
  ].join('\n');
}

function journeyProse(from: string, to: string, date: string): string {
  const a = cityName(from);
  const b = cityName(to);
  const h = hash(`${a.toLowerCase()}>${b.toLowerCase()}@${date.trim()}`);
  const depH = 6 + (h % 12);
  const depM = ((h >>> 4) % 12) * 5;
  const hubs = HUBS.filter((n) => n !== a && n !== b);
  const hub = hubs[(h >>> 8) % hubs.length];
  const leg1 = 35 + ((h >>> 12) % 60);
  const leg2 = 25 + ((h >>> 18) % 70);
  const fmt = (mins: number) => `${String(Math.floor(mins / 60) % 24).padStart(2, '0')}:${String(mins % 60).padStart(2, '0')}`;
  const t0 = depH * 60 + depM;
  const t1 = t0 + leg1;
  const t2 = t1 + 7;
  const t3 = t2 + leg2;
  const p = (n: number) => 1 + ((h >>> n) % 12);
  return [
    `## Your journey from ${a} to ${b} on ${date}`,
    '',
    `The best connection leaves ${a} at ${fmt(t0)} and reaches ${b} at ${fmt(t3)}, with one change in ${hub}. ` +
      `The whole trip takes ${t3 - t0} minutes, including a ${t2 - t1}-minute transfer.`,
    '',
    `- **Leg 1**: InterCity train from ${a} (platform ${p(20)}) at ${fmt(t0)}, arriving in ${hub} (platform ${p(24)}) at ${fmt(t1)}.`,
    `- **Change**: walk to platform ${p(26)} in ${hub}, about ${t2 - t1} minutes.`,
    `- **Leg 2**: InterRegio train from ${hub} at ${fmt(t2)}, arriving in ${b} (platform ${p(28)}) at ${fmt(t3)}.`,
    '',
    '## Tips',
    '',
    depH < 9 || depH >= 16
      ? `- Trains in the ${depH < 9 ? 'morning' : 'evening'} peak can be busy; reserving a seat on the ${a}–${hub} leg is worthwhile.`
      : '- Midday trains are usually quiet, so you should find a seat easily.',
    `- Check the weather in ${b} before you leave (try the get_weather tool).`,
    '- Keep your ticket on your phone; inspectors check on both legs.',
  ].join('\n');
}

type Unit = { dim: string; toBase: (v: number) => number; fromBase: (v: number) => number; label: string };
const lin = (dim: string, factor: number, label: string): Unit => ({ dim, toBase: (v) => v * factor, fromBase: (v) => v / factor, label });
const UNITS: Record<string, Unit> = {
  c: { dim: 'temperature', toBase: (v) => v, fromBase: (v) => v, label: '°C' },
  f: { dim: 'temperature', toBase: (v) => ((v - 32) * 5) / 9, fromBase: (v) => (v * 9) / 5 + 32, label: '°F' },
  k: { dim: 'temperature', toBase: (v) => v - 273.15, fromBase: (v) => v + 273.15, label: 'K' },
  m: lin('length', 1, 'm'),
  km: lin('length', 1000, 'km'),
  ft: lin('length', 0.3048, 'ft'),
  mi: lin('length', 1609.344, 'mi'),
  kg: lin('mass', 1, 'kg'),
  lb: lin('mass', 0.45359237, 'lb'),
  kmh: lin('speed', 1, 'km/h'),
  mph: lin('speed', 1.609344, 'mph'),
  ms: lin('speed', 3.6, 'm/s'),
  kn: lin('speed', 1.852, 'kn'),
};
const unitKey = (u: string) =>
  u
    .trim()
    .toLowerCase()
    .replace(/[°/\s.]/g, '')
    .replace(/^deg/, '');

function convert(value: number, from: string, to: string): CallToolResult {
  const a = UNITS[unitKey(from)];
  const b = UNITS[unitKey(to)];
  if (!a || !b) {
    return {
      isError: true,
      content: [{ type: 'text', text: `Sorry, I don't know the unit "${!a ? from : to}". Known units: ${Object.keys(UNITS).join(', ')}.` }],
    };
  }
  if (a.dim !== b.dim) {
    return { isError: true, content: [{ type: 'text', text: `Cannot convert ${a.dim} (${a.label}) to ${b.dim} (${b.label}).` }] };
  }
  const result = Math.round(b.fromBase(a.toBase(value)) * 100) / 100;
  const show = (v: number, u: Unit) => (u.label.startsWith('°') ? `${v}${u.label}` : `${v} ${u.label}`);
  return { content: [{ type: 'text', text: `${show(value, a)} is ${show(result, b)}.` }] };
}

const GUIDE = `# Weather & Journey Demo

This server answers in friendly prose, the way many MCP servers do today.

## Tools
- **get_weather**: current conditions and a 3-day forecast for a city.
- **plan_journey**: a train connection between two cities on a date.
- **convert_units**: temperature, length, mass and speed conversions.

## Examples
- "What's the weather in Bern?" → \`get_weather { "city": "Bern" }\`
- "How do I get from Zurich to Lugano on 2026-03-14?" → \`plan_journey { "from": "Zurich", "to": "Lugano", "date": "2026-03-14" }\`
- "What is 15 km/h in mph?" → \`convert_units { "value": 15, "from": "kmh", "to": "mph" }\`
`;

export function createDemoServer(): McpServer {
  const server = new McpServer(
    { name: 'weather-journey-demo', title: 'Weather/Journey Demo', version: '1.0.0' },
    { instructions: 'A demo weather and journey-planning service. Results are written as prose and markdown for humans.' },
  );

  server.registerTool(
    'get_weather',
    {
      title: 'Current weather',
      description:
        'Get the current weather for a city, written as a short human-readable report. ' +
        'Includes temperature, conditions, humidity and wind, followed by a 3-day forecast table.',
      inputSchema: { city: z.string().min(1).describe('City name, e.g. "Bern" or "Zurich"') },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ city }) => ({ content: [{ type: 'text', text: weatherProse(weatherFor(city)) }] }),
  );

  server.registerTool(
    'plan_journey',
    {
      title: 'Plan a train journey',
      description:
        'Plan a public-transport journey between two cities on a given date. ' +
        'Returns a narrative description of the best connection with a list of legs and travel tips.',
      inputSchema: {
        from: z.string().min(1).describe('Departure city, e.g. "Bern"'),
        to: z.string().min(1).describe('Destination city, e.g. "Lugano"'),
        date: z.string().min(1).describe('Travel date, preferably ISO 8601 (YYYY-MM-DD)'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ from, to, date }) => ({ content: [{ type: 'text', text: journeyProse(from, to, date) }] }),
  );

  server.registerTool(
    'convert_units',
    {
      title: 'Convert units',
      description:
        'Convert a value between units of temperature (c, f, k), length (m, km, ft, mi), mass (kg, lb) or speed (kmh, mph, ms, kn). ' +
        'Answers with one short sentence.',
      inputSchema: {
        value: z.number().describe('The numeric value to convert'),
        from: z.string().min(1).describe('Source unit, e.g. "c", "km", "kmh"'),
        to: z.string().min(1).describe('Target unit, e.g. "f", "mi", "mph"'),
      },
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ value, from, to }) => convert(value, from, to),
  );

  server.registerResource(
    'cities',
    'demo://cities',
    { title: 'Known cities', description: 'The cities this demo knows about, as JSON.', mimeType: 'application/json' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(DEMO_CITIES, null, 2) }] }),
  );

  server.registerResource(
    'guide',
    'demo://guide',
    { title: 'User guide', description: 'How to use this demo server, with examples.', mimeType: 'text/markdown' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: GUIDE }] }),
  );

  server.registerResource(
    'city-weather',
    new ResourceTemplate('demo://weather/{city}', {
      list: async () => ({
        resources: DEMO_CITIES.map((c) => ({
          uri: `demo://weather/${encodeURIComponent(c.name)}`,
          name: `weather-${c.name.toLowerCase()}`,
          title: `Weather in ${c.name}`,
          mimeType: 'application/json',
        })),
      }),
      complete: { city: (value) => DEMO_CITIES.map((c) => c.name).filter((n) => n.toLowerCase().startsWith(value.toLowerCase())) },
    }),
    { title: 'Weather by city', description: 'Current weather and forecast for a city, as JSON.', mimeType: 'application/json' },
    async (uri, { city }) => {
      const name = decodeURIComponent(Array.isArray(city) ? city[0] : city);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(weatherFor(name), null, 2) }] };
    },
  );

  server.registerPrompt(
    'trip_briefing',
    {
      title: 'Trip briefing',
      description: 'Ask the assistant for a short briefing before a trip: weather, how to get there and what to pack.',
      argsSchema: {
        destination: z.string().describe('Where the trip goes, e.g. "Zermatt"'),
        days: z.string().optional().describe('Length of the trip in days (default 3)'),
      },
    },
    ({ destination, days }) => {
      const n = days && /^\d+$/.test(days.trim()) ? Number(days.trim()) : 3;
      const place = cityName(destination);
      return {
        description: `Trip briefing for ${place}`,
        messages: [
          {
            role: 'user',
            content: {
              type: 'text',
              text:
                `I'm planning a ${n}-day trip to ${place}. Please write me a friendly briefing. ` +
                `First check the current weather and the forecast for ${place}, then suggest how to get there by train, ` +
                `and finish with a short packing list that fits the conditions. Keep it to a few paragraphs and use markdown headings.`,
            },
          },
        ],
      };
    },
  );

  return server;
}
