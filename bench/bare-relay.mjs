/**
 * The floor the proxy is measured against: a bare node:http relay to one stdio child, JSON
 * replies, nothing else (no sessions, checks, limits, logs or metrics). Not a product: what
 * relaying alone costs. One client at a time (requests are matched to answers by id).
 *
 *   node bench/bare-relay.mjs [--port N] -- <command> [args...]   prints `LISTENING <url>`
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';

const dash = process.argv.indexOf('--');
const [command, ...args] = process.argv.slice(dash + 1);
const portAt = process.argv.indexOf('--port');
const port = portAt > 0 && portAt < dash ? Number(process.argv[portAt + 1]) : 0;
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('exit', () => process.exit(1));
/** Response waiting for the answer with this id. */
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
    const res = waiting.get(id);
    if (!res) continue;
    waiting.delete(id);
    res.writeHead(200, { 'content-type': 'application/json' }).end(line);
  }
});
createServer((req, res) => {
  if (req.method !== 'POST') return void res.writeHead(405).end();
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const msg = JSON.parse(body);
    if (msg.id === undefined) res.writeHead(202).end();
    else waiting.set(msg.id, res);
    child.stdin.write(`${body.replace(/\n/g, ' ')}\n`);
  });
}).listen(port, '127.0.0.1', function () {
  process.stdout.write(`LISTENING http://127.0.0.1:${this.address().port}/mcp\n`);
});
process.on('SIGTERM', () => (child.kill(), process.exit(0)));
