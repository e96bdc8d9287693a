/**
 * The bare relay (bench/bare-relay.mjs) on fastify instead of node:http: what the proxy's web
 * framework costs by itself, with nothing else (no sessions, checks, limits, logs or metrics).
 * Not a product. bench/features.ts starts it as `fastify`.
 *
 *   node bench/fastify-relay.mjs [--port N] -- <command> [args...]   prints `LISTENING <url>`
 */
import { spawn } from 'node:child_process';
import Fastify from 'fastify';

const dash = process.argv.indexOf('--');
const [command, ...args] = process.argv.slice(dash + 1);
const portAt = process.argv.indexOf('--port');
const port = portAt > 0 && portAt < dash ? Number(process.argv[portAt + 1]) : 0;
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('exit', () => process.exit(1));
/** Reply waiting for the answer with this id. */
const waiting = new Map();
let buffered = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (chunk) => {
  buffered += chunk;
  for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    if (!line) continue;
    const { id } = JSON.parse(line);
    const reply = waiting.get(id);
    if (!reply) continue;
    waiting.delete(id);
    reply.header('content-type', 'application/json').send(line);
  }
});
const app = Fastify({ logger: false });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => done(null, body));
app.post('/mcp', (req, reply) => {
  const msg = JSON.parse(req.body);
  if (msg.id === undefined) reply.code(202).send();
  else waiting.set(msg.id, reply);
  child.stdin.write(`${req.body.replace(/\n/g, ' ')}\n`);
  return reply;
});
const url = await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`LISTENING ${url}/mcp\n`);
process.on('SIGTERM', () => (child.kill(), process.exit(0)));
