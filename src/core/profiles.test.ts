import { describe, expect, it } from 'vitest';
import { configSchema } from '../config/schema.js';
import { Profiles, tagsInEffect } from './profiles.js';

const profiles = (raw: unknown) =>
  new Profiles(configSchema.parse({ profiles: raw, serverVariants: { variants: [{ id: 'weather', description: 'w' }] } }).profiles);
const EXTENSION = 'io.modelcontextprotocol/content-negotiation';

describe('Profiles', () => {
  const p = profiles({
    default: { features: ['verbosity=compact'] },
    agents: { features: ['agent', 'format=json'], variant: 'weather', principals: ['token:ci-*'], path: '/mcp/agents' },
    humans: { features: ['human', 'format=markdown'], clientNames: ['Claude*'], principals: ['token:ann'] },
  });

  it('chooses by path, then principal, then client name, then default, and says why', () => {
    expect(p.assign({ principal: 'token:ann', path: '/mcp/agents' })).toEqual({
      tags: ['agent', 'format=json'],
      variant: 'weather',
      profile: { name: 'agents', why: 'path /mcp/agents' },
    });
    expect(p.assign({ principal: 'token:ci-7', clientName: 'Claude Code' }).profile).toEqual({
      name: 'agents',
      why: 'principal token:ci-7',
    });
    expect(p.assign({ principal: '', clientName: 'Claude Code' }).profile).toEqual({ name: 'humans', why: 'client name "Claude Code"' });
    expect(p.assign({ principal: '', path: '/mcp' })).toEqual({
      tags: ['verbosity=compact'],
      profile: { name: 'default', why: 'every client' },
    });
    expect(Profiles.NONE.assign({ principal: 'token:x' })).toEqual({ tags: [] });
  });

  it('layers the MCP-Features header over the profile: the header wins an axis both name', () => {
    const a = p.assign({ principal: 'token:ci-1', featuresHeader: 'format=markdown, x-mine, Bad' });
    expect(a.tags).toEqual(['format=markdown', 'x-mine', 'agent']);
    expect(a.header?.ignored).toEqual([{ tag: 'Bad', reason: expect.any(String) }]);
  });

  it("the tags in effect: the client's declaration wins each axis it names", () => {
    const assigned = p.assign({ principal: '', featuresHeader: 'agent, format=json' });
    const declared = { extensions: { [EXTENSION]: { features: ['format=markdown'] } } };
    expect(tagsInEffect(declared, assigned)).toEqual({
      profile: { name: 'default', why: 'every client' },
      tags: ['agent', 'format=markdown', 'verbosity=compact'],
      overridden: ['format=json'],
    });
    expect(tagsInEffect({}, Profiles.NONE.assign({ principal: '' }))).toBeUndefined();
  });
});
