/**
 * The bare relay (bench/bare-relay.mjs) on fastify instead of node:http: what the proxy's web
 * framework costs by itself, with nothing else (no sessions, checks, limits, logs or metrics).
 * Not a product. bench/features.ts starts it as `fastify`.
 *
 *   node bench/fastify-relay.mjs [--port N] -- <command> [args...]   prints `LISTENING <url>`
 */
import Fastify from 'fastify';
import { relayChild } from './lib/relay-child.mjs';

/** Reply waiting for the answer with this id. */
const waiting = new Map();
const child = relayChild((id, line) => {
  const reply = waiting.get(id);
  if (!reply) return;
  waiting.delete(id);
  reply.header('content-type', 'application/json').send(line);
});
const app = Fastify({ logger: false });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => done(null, body));
app.post('/mcp', (req, reply) => {
  const msg = JSON.parse(req.body);
  if (msg.id === undefined) reply.code(202).send();
  else waiting.set(msg.id, reply);
  child.send(req.body);
  return reply;
});
const url = await app.listen({ port: child.port, host: '127.0.0.1' });
process.stdout.write(`LISTENING ${url}/mcp\n`);
