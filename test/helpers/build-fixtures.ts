/**
 * Vitest global setup of the end-to-end projects: bundles each TypeScript fixture server
 * (test/fixtures/*.ts) into test/fixtures/.built/<name>.mjs, packages left as imports, so a test
 * starts it with plain node. Through tsx each start cost a second of CPU more, and the suite
 * starts hundreds. The test workers learn it from TEST_FIXTURES_BUILT (set here, inherited): a
 * bench or a script run on its own starts the sources with tsx, never a stale bundle.
 */
import { readdirSync } from 'node:fs';
import { build } from 'esbuild';

const FIXTURES = new URL('../fixtures/', import.meta.url);

export default async function buildFixtures(): Promise<void> {
  const names = readdirSync(FIXTURES).filter((f) => f.endsWith('.ts'));
  await build({
    entryPoints: names.map((f) => new URL(f, FIXTURES).pathname),
    outdir: new URL('.built/', FIXTURES).pathname,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  process.env.TEST_FIXTURES_BUILT = '1';
}
