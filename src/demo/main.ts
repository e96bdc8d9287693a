#!/usr/bin/env node
/**
 * Entry point of the weather/journey demo server.
 *   stdio: node --import tsx src/demo/main.ts            (or node dist/demo/main.js after build)
 *   HTTP:  node --import tsx src/demo/main.ts --http [--port N] [--host 127.0.0.1]
 */
import { serveMcp } from './serve.js';
import { createDemoServer } from './server.js';

serveMcp(createDemoServer, process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`demo server failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
