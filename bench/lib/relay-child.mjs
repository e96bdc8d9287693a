/**
 * The child side of the bench's bare relays (bare-relay.mjs, fastify-relay.mjs): the command
 * line (`[--port N] -- <command> [args...]`), one stdio child, and its answers handed to whoever
 * waits for their id. One client at a time: nothing else is matched.
 */
import { spawn } from 'node:child_process';

/** Starts the child; `answer(id, line)` gets each answer line that has an id. */
export function relayChild(answer) {
  const dash = process.argv.indexOf('--');
  const [command, ...args] = process.argv.slice(dash + 1);
  const portAt = process.argv.indexOf('--port');
  const port = portAt > 0 && portAt < dash ? Number(process.argv[portAt + 1]) : 0;
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  child.on('exit', () => process.exit(1));
  let buffered = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line) answer(JSON.parse(line).id, line);
    }
  });
  process.on('SIGTERM', () => (child.kill(), process.exit(0)));
  return { port, send: (body) => child.stdin.write(`${body.replace(/\n/g, ' ')}\n`) };
}
