/**
 * The bare HTTP proxy (bench/bare-http-proxy.mjs) on the proxy's own stack: fastify in front,
 * each body read and decoded as JSON (what any gateway that looks at a message must do), sent on
 * with undici and the answer read whole and written back. What the stack costs by itself, with
 * nothing else (no checks, sessions, limits, logs or metrics). Not a product.
 *
 *   node bench/fastify-http-proxy.mjs [--port N] <upstream URL>   prints `LISTENING <url>`
 */
import Fastify from 'fastify';
import { Agent, request } from 'undici';

const args = process.argv.slice(2);
const at = args.indexOf('--port');
const port = at >= 0 ? Number(args.splice(at, 2)[1]) : 0;
const upstream = args[0];
const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 64 });
const PASSED = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id'];

const app = Fastify({ logger: false });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => done(null, body));
app.post('/mcp', async (req, reply) => {
  JSON.parse(req.body);
  const headers = {};
  for (const h of PASSED) if (req.headers[h] !== undefined) headers[h] = req.headers[h];
  const answer = await request(upstream, { method: 'POST', dispatcher, headers, body: req.body });
  const body = await answer.body.arrayBuffer();
  for (const h of ['content-type', 'mcp-session-id']) if (answer.headers[h] !== undefined) reply.header(h, answer.headers[h]);
  return reply.code(answer.statusCode).send(Buffer.from(body));
});
const url = await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`LISTENING ${url}/mcp\n`);
