import { describe, expect, it } from 'vitest';
import { extractData, keyOf, typed } from './extract.js';

describe('extractData', () => {
  it('reads JSON documents, fenced blocks and the first object in prose', () => {
    expect(extractData(' {"a": 1} ')).toEqual({ a: 1 });
    expect(extractData('Here:\n```json\n[1, 2]\n```\nbye')).toEqual([1, 2]);
    expect(extractData('The result is {"ok": true, "n": "}"} as computed.')).toEqual({ ok: true, n: '}' });
  });

  it('turns key: value lines and tables into typed data', () => {
    const text = [
      '## Current Weather in Bern',
      '',
      'It is mild today.',
      '',
      'Temperature: 8',
      '**Humidity**: 72',
      '- Conditions: cloudy',
      'Raining: false',
      '',
      '### 3-day forecast',
      '',
      '| Day | High | Low |',
      '|---|---|---|',
      '| Mon | 9 | 2 |',
      '| Tue | 11 | 4 |',
    ].join('\n');
    expect(extractData(text)).toEqual({
      temperature: 8,
      humidity: 72,
      conditions: 'cloudy',
      raining: false,
      '3_day_forecast': [
        { day: 'Mon', high: 9, low: 2 },
        { day: 'Tue', high: 11, low: 4 },
      ],
    });
  });

  it('finds nothing in plain prose', () => {
    expect(extractData('Just a sentence. Another one: with a colon in the middle of it all.')).toBeUndefined();
    expect(extractData('')).toBeUndefined();
  });
});

describe('helpers', () => {
  it('normalises keys and types values', () => {
    expect(keyOf('Wind speed (km/h)')).toBe('wind_speed_km_h');
    expect([typed('12'), typed('-1.5'), typed('true'), typed('8°C'), typed('007')]).toEqual([12, -1.5, true, '8°C', '007']);
  });
});
