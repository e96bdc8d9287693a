/**
 * The floor a proxy in front of an HTTP MCP server is measured against: a bare node:http reverse
 * proxy to one upstream URL, keep-alive, bodies and answers piped through (no checks, sessions,
 * limits, logs or metrics). Not a product: what forwarding alone costs.
 *
 *   node bench/bare-http-proxy.mjs [--port N] <upstream URL>   prints `LISTENING <url>`
 */
import { Agent, createServer, request } from 'node:http';

const args = process.argv.slice(2);
const at = args.indexOf('--port');
const port = at >= 0 ? Number(args.splice(at, 2)[1]) : 0;
const upstream = new URL(args[0]);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

createServer((req, res) => {
  const out = request(
    { host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: req.method, headers: req.headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', () => res.writeHead(502).end());
  req.pipe(out);
}).listen(port, '127.0.0.1', function () {
  process.stdout.write(`LISTENING http://127.0.0.1:${this.address().port}/mcp\n`);
});
