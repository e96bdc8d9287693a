import { describe, expect, it } from 'vitest';
import { labelOf, toMarkdown } from './render.js';

describe('toMarkdown', () => {
  it('renders scalars, tables, lists and nested sections', () => {
    const md = toMarkdown(
      {
        location: 'Bern',
        temperature_c: 8,
        forecast: [
          { day: 'Mon', high: 9 },
          { day: 'Tue', high: 'a|b' },
        ],
        tags: ['x', 'y'],
        wind: { speed: 15 },
      },
      'Weather',
    );
    expect(md).toBe(
      [
        '## Weather',
        '',
        '- **Location**: Bern\n- **Temperature c**: 8',
        '',
        '### Forecast',
        '',
        '| Day | High |\n| --- | --- |\n| Mon | 9 |\n| Tue | a\\|b |',
        '',
        '### Tags',
        '',
        '- x\n- y',
        '',
        '### Wind',
        '',
        '- **Speed**: 15',
      ].join('\n'),
    );
  });

  it('renders a top-level array of objects as a table and scalars inline', () => {
    expect(toMarkdown([{ a: 1 }, { b: null }])).toBe('| A | B |\n| --- | --- |\n| 1 | — |\n| — | null |');
    expect(toMarkdown(42)).toBe('42');
  });

  it('turns keys into labels', () => {
    expect([labelOf('wind_speed_kmh'), labelOf('temperatureC'), labelOf('x')]).toEqual(['Wind speed kmh', 'Temperature c', 'X']);
  });
});
