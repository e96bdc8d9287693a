/**
 * The floor the proxy is measured against: a bare node:http relay to one stdio child, JSON
 * replies, nothing else (no sessions, checks, limits, logs or metrics). Not a product: what
 * relaying alone costs. One client at a time (requests are matched to answers by id).
 *
 *   node bench/bare-relay.mjs [--port N] -- <command> [args...]   prints `LISTENING <url>`
 */
import { createServer } from 'node:http';
import { relayChild } from './lib/relay-child.mjs';

/** Response waiting for the answer with this id. */
const waiting = new Map();
const child = relayChild((id, line) => {
  const res = waiting.get(id);
  if (!res) return;
  waiting.delete(id);
  res.writeHead(200, { 'content-type': 'application/json' }).end(line);
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
    child.send(body);
  });
}).listen(child.port, '127.0.0.1', function () {
  process.stdout.write(`LISTENING http://127.0.0.1:${this.address().port}/mcp\n`);
});
