import { describe, expect, it } from 'vitest';
import { extractData, keyOf, keyValueOf, numberWithUnit, typed, typedEntry } from './data-in-text.js';

const data = (text: string) => extractData(text)?.data;

describe('extractData', () => {
  it('reads JSON documents (whole), fenced blocks and the first object in prose (partial)', () => {
    expect(extractData(' {"a": 1} ')).toEqual({ data: { a: 1 }, whole: true });
    expect(extractData('Here:\n```json\n[1, 2]\n```\nbye')).toEqual({ data: [1, 2], whole: false });
    expect(data('The result is {"ok": true, "n": "}"} as computed.')).toEqual({ ok: true, n: '}' });
  });

  it('turns key: value lines and tables into typed data, units into keys, the opening heading into a title', () => {
    const text = [
      '## Current Weather in Bern',
      '',
      'It is mild today.',
      '',
      'Temperature: 8°C',
      '**Humidity**: 72%',
      '- Conditions: cloudy',
      'Raining: false',
      'Wind: 12 km/h from SW',
      '',
      '### 3-day forecast',
      '',
      '| Day | High | Low |',
      '|---|---|---|',
      '| Mon | 9°C | 2°C |',
      '| Tue | 11°C | -4°C |',
    ].join('\n');
    expect(data(text)).toEqual({
      title: 'Current Weather in Bern',
      temperature_c: 8,
      humidity_percent: 72,
      conditions: 'cloudy',
      raining: false,
      wind: '12 km/h from SW',
      '3_day_forecast': [
        { day: 'Mon', high_c: 9, low_c: 2 },
        { day: 'Tue', high_c: 11, low_c: -4 },
      ],
    });
  });

  it('writes the JSON text of prose data as it reads it, exactly as JSON.stringify would', () => {
    const texts = [
      '# Report\n\nTemperature: 8°C\nWind: "gusty" \\ strong\nHuge: 1e999\nZero: -0\nFlag: true\n\n## Forecast\n\n| Day | High |\n|---|---|\n| Mon | 9°C |',
      '## 2024\n\n| A | B |\n|---|---|\n| 1 | 2 |\n\nx: 1',
      'a: 1\na: 2\nb: NW',
    ];
    for (const text of texts) {
      const found = extractData(text)!;
      expect(found.json === undefined || found.json === JSON.stringify(found.data)).toBe(true);
    }
    expect(extractData(texts[0])!.json).toBeDefined();
  });

  it('keeps a column as strings when its cells do not share a unit', () => {
    expect(data('| A | B |\n|---|---|\n| 1 kg | x |\n| 2 m | 3 |')).toEqual({
      table: [
        { a: '1 kg', b: 'x' },
        { a: '2 m', b: 3 },
      ],
    });
  });

  it('reads lines that repeat the same keys as an array of records, named by the label above them, never as numbered keys', () => {
    const log = [
      'Commit history:',
      "Commit: 'f1980d60142f700b8a5aad97628425acc1f61f55'",
      "Author: 'Test'",
      'Date: 2026-11-26 18:27:16 +0000',
      `Message: 'Add "notes"'`,
      '',
      "Commit: '7f31e20c8fa09c4366426ec0bec23cd35550a2ca'",
      "Author: 'Test'",
      'Date: 2026-11-26 18:27:16 +0000',
      "Message: 'First draft'",
      '',
    ].join('\n');
    expect(data(log)).toEqual({
      commit_history: [
        { commit: 'f1980d60142f700b8a5aad97628425acc1f61f55', author: 'Test', date: '2026-11-26 18:27:16 +0000', message: 'Add "notes"' },
        { commit: '7f31e20c8fa09c4366426ec0bec23cd35550a2ca', author: 'Test', date: '2026-11-26 18:27:16 +0000', message: 'First draft' },
      ],
    });
    expect(data('Repository: demo\nBranch: main\n\nCommit: a1\nAuthor: Ada\n\nCommit: b2\nAuthor: Grace\nTotal: 2')).toEqual({
      repository: 'demo',
      branch: 'main',
      items: [
        { commit: 'a1', author: 'Ada' },
        { commit: 'b2', author: 'Grace' },
      ],
      total: 2,
    });
    expect(data('a: 1\na: 2\na: 3')).toEqual({ items: [{ a: 1 }, { a: 2 }, { a: 3 }] });
  });

  it('reads no data where repeated keys are out of step, rather than invent a shape', () => {
    for (const text of ['a: 1\nb: 2\na: 3', 'a: 1\nb: 2\na: 3\nc: 4', 'a: 1\nb: 2\na: 3\nb: 4\nb: 5', 'Items: 1\na: 1\na: 2']) {
      expect(extractData(text), text).toBeUndefined();
    }
  });

  it('takes the quote marks off a quoted value only when that is all there is to take off', () => {
    expect(data(`a: 'x "y"'\nb: "007"\nc: 'it\\'s'\nd: 'a' and 'b'`)).toEqual({ a: 'x "y"', b: '007', c: "'it\\'s'", d: "'a' and 'b'" });
  });

  it('reads nothing out of a diff, and no JSON object where prose holds two', () => {
    const diff =
      'diff --git a/status.json b/status.json\nindex 7f36530..9be8bae 100644\n--- a/status.json\n+++ b/status.json\n@@ -1 +1 @@\n-{"status":"draft"}\n+{"status":"final"}\n';
    expect(extractData(diff)).toBeUndefined();
    expect(
      extractData(diff.replace('diff --git a/status.json b/status.json\n', '').replace('index 7f36530..9be8bae 100644\n', '')),
    ).toBeUndefined();
    expect(extractData('Was {"status": "draft"}, now {"status": "final"}.')).toBeUndefined();
    expect(extractData('Request:\n```json\n{"a": 1}\n```\nResponse:\n```json\n{"b": 2}\n```')).toBeUndefined();
    expect(data('Now {"status": "final"} (see {braces} in prose).')).toEqual({ status: 'final' });
  });

  it('finds nothing in plain prose, and no data nested too deeply', () => {
    expect(extractData('Just a sentence. Another one: with a colon in the middle of it all.')).toBeUndefined();
    expect(extractData('')).toBeUndefined();
    expect(extractData('['.repeat(100) + ']'.repeat(100))).toBeUndefined();
  });
});

describe('helpers', () => {
  it('normalises keys and types values', () => {
    expect(keyOf('Wind speed (km/h)')).toBe('wind_speed_km_h');
    expect(keyOf('__a__b__')).toBe('a_b');
    expect([typed('12'), typed('-1.5'), typed('true'), typed('8°C'), typed('007')]).toEqual([12, -1.5, true, '8°C', '007']);
  });

  it('splits a unit off a number', () => {
    expect(['8°C', '72%', '12 km/h', '3.5 kg', '-2 °F', '5 million', '007 kg', '1e3 m', '12 km/h/s'].map(numberWithUnit)).toEqual([
      { value: 8, unit: '°C' },
      { value: 72, unit: '%' },
      { value: 12, unit: 'km/h' },
      { value: 3.5, unit: 'kg' },
      { value: -2, unit: '°F' },
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect([typedEntry('temperature', '8°C'), typedEntry('humidity_percent', '72%'), typedEntry('wind', '12 km/h')]).toEqual([
      ['temperature_c', 8],
      ['humidity_percent', 72],
      ['wind_km_h', 12],
    ]);
  });

  it('reads key: value lines, and not URLs or long labels', () => {
    expect([
      keyValueOf('- **UV index**: 3'),
      keyValueOf('https://example.org'),
      keyValueOf(`${'x'.repeat(50)}: y`),
      keyValueOf('Time:12'),
    ]).toEqual([['UV index', '3'], undefined, undefined, undefined]);
  });
});
