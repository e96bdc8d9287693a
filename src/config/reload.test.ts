import { describe, expect, it } from 'vitest';
import { diffConfig } from './reload.js';
import { configSchema } from './schema.js';

describe('diffConfig', () => {
  const config = (profiles: unknown) => configSchema.parse({ profiles });

  it('takes profiles over live; a changed path is a route, served only after a restart', () => {
    const before = config({ agents: { features: ['agent'], path: '/mcp/agents' } });
    expect(diffConfig(before, config({ agents: { features: ['format=json'], path: '/mcp/agents' } }))).toEqual({
      live: ['profiles'],
      restart: [],
    });
    expect(diffConfig(before, config({ agents: { features: ['agent'], path: '/mcp/bots' } }))).toEqual({
      live: ['profiles'],
      restart: ['profiles.*.path'],
    });
  });
});
