/**
 * Inbound authentication through the proxy: static tokens (hashed in the config) and JWTs from a
 * JWKS served on 127.0.0.1, the 401 challenge and the RFC 9728 metadata it points to, sessions and
 * requestState bound to the principal they were issued to, and the refusal to serve a
 * non-loopback address unauthenticated.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import {
  commandLine,
  fixtureArgv,
  freePort,
  logEntries,
  logged,
  PROXY_MAIN,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { INIT, metricValue, modern, postWithHost, rawPost } from '../helpers/raw.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-9876543210';
const FAULTY = commandLine(fixtureArgv('faulty-server'));

function configFile(body: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-auth-')), 'proxy.yaml');
  writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\n${body}`);
  return file;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('static tokens', () => {
  let proxy: Running;

  beforeAll(async () => {
    proxy = await startProxy([
      '--config',
      configFile(`auth:\n  tokens:\n    - { name: alice, sha256: ${hashToken(ALICE)} }\n    - { name: bob, sha256: ${hashToken(BOB)} }\n`),
    ]);
  }, 30_000);
  afterAll(stopAll);

  it('answers 401 with a challenge that points to the protected resource metadata', async () => {
    for (const headers of [{}, bearer('wrong'), { authorization: 'Basic YTpi' }]) {
      const res = await rawPost(proxy.url, INIT, headers);
      expect(res.status).toBe(401);
      expect(res.messages[0].error.message).toBeTruthy();
      const challenge = res.headers.get('www-authenticate')!;
      expect(challenge).toMatch(/^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
      if (String((headers as Record<string, string>).authorization ?? '').startsWith('Bearer'))
        expect(challenge).toContain('error="invalid_token"');
    }
    const metadataUrl = /resource_metadata="([^"]+)"/.exec((await rawPost(proxy.url, INIT)).headers.get('www-authenticate')!)![1];
    const metadata = await (await fetch(metadataUrl)).json();
    expect(metadata).toMatchObject({ resource: proxy.url, bearer_methods_supported: ['header'] });
    // Health stays open to probes.
    expect((await fetch(new URL('/healthz', proxy.url))).status).toBe(200);
  });

  it('guards the endpoint however its path is spelled, and refuses Host headers that are not host names', async () => {
    for (const path of ['/mc%70', '/%6dcp', '/mcp?x=1']) {
      const res = await rawPost(new URL(path, proxy.url).toString(), INIT);
      expect(res.status).toBe(401);
    }
    for (const host of ['127.0.0.1:1@evil.example', '127.0.0.1:1"x', 'localhost:8080,scope=admin']) {
      expect(await postWithHost(proxy.url, host, INIT)).toBe(403);
    }
  });

  it('lets token holders in (Authorization or X-API-Key) and keeps each session to its holder', async () => {
    const client = new Client({ name: 'auth-test', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(proxy.url), { requestInit: { headers: bearer(ALICE) } });
    await client.connect(transport);
    expect((await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content).toEqual([{ type: 'text', text: 'hi' }]);
    const session = { 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-11-25' };
    const list = { jsonrpc: '2.0', id: 5, method: 'tools/list' };
    expect((await rawPost(proxy.url, list, { ...session, 'x-api-key': ALICE })).status).toBe(200);
    const stolen = await rawPost(proxy.url, list, { ...session, ...bearer(BOB) });
    expect(stolen.status).toBe(403);
    expect(stolen.messages[0].error.message).toMatch(/another client identity/);
    expect((await rawPost(proxy.url, list, session)).status).toBe(401);
    await client.close();
  });

  it('binds requestState to the principal it was issued to', async () => {
    const caps = { elicitation: { form: {} } };
    const ask = modern(1, 'tools/call', { name: 'elicit', arguments: { message: 'who?' } }, caps);
    const first = (await rawPost(proxy.url, ask.body, { ...ask.headers, ...bearer(ALICE) })).messages[0].result;
    expect(first.resultType).toBe('input_required');
    const [key] = Object.keys(first.inputRequests);
    const retry = modern(
      2,
      'tools/call',
      {
        name: 'elicit',
        arguments: { message: 'who?' },
        requestState: first.requestState,
        inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
      },
      caps,
    );
    const asBob = await rawPost(proxy.url, retry.body, { ...retry.headers, ...bearer(BOB) });
    expect(asBob.messages[0].error.message).toMatch(/another client identity/);
    const asAlice = await rawPost(proxy.url, retry.body, { ...retry.headers, ...bearer(ALICE) });
    expect(asAlice.messages[0].result.resultType).toBe('complete');
  });
});

describe('JWT bearer tokens', () => {
  let jwks: Server;
  let key: CryptoKey;
  let stranger: CryptoKey;
  let proxy: Running;
  const ISSUER = 'https://issuer.test';
  const AUDIENCE = 'mcp-negotiate-proxy-test';

  const sign = (claims: Record<string, unknown>, o: { key?: CryptoKey; exp?: string; aud?: string } = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(o.aud ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(o.exp ?? '5m')
      .sign(o.key ?? key);

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    key = pair.privateKey;
    ({ privateKey: stranger } = await generateKeyPair('ES256'));
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwks = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks.json`;
    proxy = await startProxy([
      '--config',
      configFile(
        `auth:\n  jwt:\n    jwksUrl: ${jwksUrl}\n    issuer: ${ISSUER}\n    audience: ${AUDIENCE}\n    requiredScopes: [mcp:use]\n  authorizationServers: [${ISSUER}]\n`,
      ),
    ]);
  }, 30_000);
  afterAll(async () => {
    await stopAll();
    jwks?.close();
  });

  it('accepts a valid token and refuses expired, foreign, mis-addressed and under-scoped ones', async () => {
    const ok = await rawPost(proxy.url, INIT, bearer(await sign({ sub: 'user-1', scope: 'mcp:use other' })));
    expect(ok.status).toBe(200);
    const cases: Array<[string, number, RegExp]> = [
      [await sign({ sub: 'user-1', scope: 'mcp:use' }, { exp: '-1m' }), 401, /error="invalid_token"/],
      [await sign({ sub: 'user-1', scope: 'mcp:use' }, { key: stranger }), 401, /error="invalid_token"/],
      [await sign({ sub: 'user-1', scope: 'mcp:use' }, { aud: 'someone-else' }), 401, /error="invalid_token"/],
      [await sign({ sub: 'user-1', scope: 'read' }), 403, /error="insufficient_scope".*scope="mcp:use"/],
      [await sign({ scope: 'mcp:use' }), 401, /error="invalid_token"/],
    ];
    for (const [token, status, challenge] of cases) {
      const res = await rawPost(proxy.url, INIT, bearer(token));
      expect(res.status).toBe(status);
      expect(res.headers.get('www-authenticate')).toMatch(challenge);
    }
    const metadata = await (await fetch(new URL('/.well-known/oauth-protected-resource/mcp', proxy.url))).json();
    expect(metadata).toMatchObject({ authorization_servers: [ISSUER], scopes_supported: ['mcp:use'] });
  });

  it('refuses tokens that never expire and tokens signed with a shared secret, saying only that the token is not valid', async () => {
    const forever = await new SignJWT({ sub: 'user-1', scope: 'mcp:use' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .sign(key);
    // The JWKS's public key used as an HMAC secret: the classic algorithm-confusion forgery.
    const secret = new TextEncoder().encode(JSON.stringify(await exportJWK(key)));
    const hmac = await new SignJWT({ sub: 'user-1', scope: 'mcp:use' })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(secret);
    for (const token of [forever, hmac]) {
      const res = await rawPost(proxy.url, INIT, bearer(token));
      expect(res.status).toBe(401);
      expect(res.messages[0].error.message).toBe('The token is not valid');
    }
    // The reason stays in the proxy's own log, on the request's one access-log line.
    await logged(proxy, (e) => e.msg === 'request' && /missing required "exp"/.test(e.refused ?? ''), 5000, 'the refusal reason logged');
    expect(logEntries(proxy).filter((e) => e.msg === 'request refused: authentication')).toEqual([]);
  });
});

describe('a JWKS that cannot be fetched', () => {
  afterAll(stopAll);

  it('answers 503 with Retry-After, not 401: the client should retry, not re-authenticate', async () => {
    const jwksUrl = `http://127.0.0.1:${await freePort()}/jwks.json`;
    const proxy = await startProxy([
      '--config',
      configFile(`auth:\n  jwt:\n    jwksUrl: ${jwksUrl}\n    issuer: https://issuer.test\n    audience: x\n`),
    ]);
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT({ sub: 'u' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('https://issuer.test')
      .setAudience('x')
      .setExpirationTime('5m')
      .sign(privateKey);
    const res = await rawPost(proxy.url, INIT, bearer(token));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(res.messages[0].error).toMatchObject({
      message: expect.stringMatching(/cannot be checked right now/),
      data: { code: 'AUTH_UNAVAILABLE' },
    });
    expect(res.messages[0].error.message).not.toMatch(/fetch|ECONNREFUSED/);
  });
});

describe('guessing credentials', () => {
  afterAll(stopAll);

  it('is refused per address after auth.failuresPerAddress failures a minute, before any JWT is checked', async () => {
    const proxy = await startProxy([
      '--config',
      configFile(`auth:\n  failuresPerAddress: 5\n  tokens:\n    - { name: alice, sha256: ${hashToken(ALICE)} }\n`),
    ]);
    // Without credentials is not a guess: it does not count.
    for (let i = 0; i < 8; i++) expect((await rawPost(proxy.url, INIT)).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await rawPost(proxy.url, INIT, bearer(`guess-${i}`))).status).toBe(401);
    const blocked = await rawPost(proxy.url, INIT, bearer('guess-6'));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.messages[0].error.message).toMatch(/auth\.failuresPerAddress/);
    // A static token still gets in from that address (checking it costs no more than the refusal); guesses do not.
    expect((await rawPost(proxy.url, INIT, bearer(ALICE))).status).toBe(200);
    expect((await rawPost(proxy.url, INIT, bearer('guess-7'))).status).toBe(429);
    expect(await metricValue(proxy.url, 'mcp_proxy_refusals_total{reason="auth_failures"}')).toBe(2);
    // One log line per refused request: the access log's.
    await logged(proxy, (e) => e.msg === 'request' && e.refused === 'auth_failures', 5000, 'the refusal in the access log');
    expect(logEntries(proxy).filter((e) => e.msg === 'request' && e.status === 401)).toHaveLength(13);
    expect(logEntries(proxy).filter((e) => e.msg !== 'request' && e.level >= 30 && /refused|authentication/.test(e.msg))).toEqual([]);
  });
});

describe('exposure', () => {
  it('refuses to serve a non-loopback address without authentication, and says what to do', async () => {
    const proc = spawn(process.execPath, [PROXY_MAIN, '--host', '0.0.0.0', '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise((resolve) => proc.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/no authentication is configured.*auth\.tokens or auth\.jwt.*--allow-unauthenticated/s);
  });
});
