import { describe, expect, it } from 'vitest';
import { refusedElicitation, refusedInputRequests, refusedUrlElicitations } from './url-elicitation.js';

describe('URL elicitations', () => {
  it('lets https: and http: URLs through, and what is no URL elicitation', () => {
    for (const url of ['https://auth.example/x?y=1', 'http://127.0.0.1:3000/', 'HTTPS://AUTH.EXAMPLE/'])
      expect(refusedElicitation('elicitation/create', { mode: 'url', url, message: 'm' })).toBeUndefined();
    expect(refusedElicitation('elicitation/create', { mode: 'form', message: 'm', requestedSchema: {} })).toBeUndefined();
    expect(refusedElicitation('sampling/createMessage', { mode: 'url', url: 'javascript:x' })).toBeUndefined();
  });

  it('refuses every other scheme, a URL that is not absolute, and none at all, naming the scheme', () => {
    const refused = (url: unknown) => refusedElicitation('elicitation/create', { mode: 'url', url, message: 'm' });
    expect(refused('javascript:alert(1)')).toMatch(/"javascript:" URL \(only https: and http:/);
    expect(refused('JavaScript:alert(1)')).toMatch(/"javascript:"/);
    expect(refused(' javascript:alert(1)')).toMatch(/"javascript:"/); // the URL parser trims, as a browser does
    for (const url of [
      'file:///etc/passwd',
      'data:text/html,x',
      'vbscript:x',
      'ftp://example.com/',
      'blob:https://a/b',
      'intent://x#Intent;end',
    ])
      expect(refused(url)).toBeDefined();
    expect(refused('/relative/path')).toMatch(/not an absolute URL/);
    expect(refused(undefined)).toMatch(/without a URL/);
    expect(refused('x:' + 'y'.repeat(10_000))).toHaveLength(refused('x:y')!.length);
  });

  it('looks into every input request of a round and every elicitation of a -32042', () => {
    const ok = { method: 'elicitation/create', params: { mode: 'url', url: 'https://a.example', message: 'm' } };
    const bad = { method: 'elicitation/create', params: { mode: 'url', url: 'file:///x', message: 'm' } };
    expect(refusedInputRequests({ a: ok, b: { method: 'roots/list' } })).toBeUndefined();
    expect(refusedInputRequests({ a: ok, b: bad })).toMatch(/"file:"/);
    expect(refusedInputRequests(undefined)).toBeUndefined();
    const error = (url: string) => ({
      code: -32042,
      message: 'm',
      data: {
        elicitations: [
          { mode: 'url', url: 'https://a.example', elicitationId: '1', message: 'm' },
          { mode: 'url', url, elicitationId: '2', message: 'm' },
        ],
      },
    });
    expect(refusedUrlElicitations(error('http://b.example'))).toBeUndefined();
    expect(refusedUrlElicitations(error('data:,x'))).toMatch(/"data:"/);
    expect(refusedUrlElicitations({ ...error('data:,x'), code: -32603 })).toBeUndefined();
    expect(refusedUrlElicitations(undefined)).toBeUndefined();
  });
});
