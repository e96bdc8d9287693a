import { defineConfig } from 'vitest/config';

/** Slow end-to-end files: the conformance suite, the docs' commands, the benchmarks' smoke run, deployments. */
const SLOW = [
  'test/e2e/conformance.test.ts',
  'test/e2e/docs.test.ts',
  'test/e2e/bench-smoke.test.ts',
  'test/e2e/docker.test.ts',
  'test/e2e/kubernetes.test.ts',
];
/** Bundles the TypeScript fixture servers, so tests start them without tsx. */
const BUILD_FIXTURES = 'test/helpers/build-fixtures.ts';
/** Unit files that start a child process: they run with the end-to-end tests. */
const UNIT_WITH_PROCESSES = ['src/upstream/encode.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files start real processes; two at a time suits a 2-core machine.
    maxWorkers: 2,
    fileParallelism: true,
    projects: [
      // No build and no processes: in-memory doubles and in-process servers on 127.0.0.1 only.
      // Its files share a worker and its imports (isolate: false): a fresh worker per file cost more
      // than the tests themselves, and none of them leaves global state behind (fake timers are restored).
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts'], exclude: UNIT_WITH_PROCESSES, isolate: false },
      },
      // The built CLI (dist/main.js) and real servers as child processes.
      {
        extends: true,
        test: {
          name: 'e2e',
          globalSetup: [BUILD_FIXTURES],
          include: ['test/e2e/**/*.test.ts', 'test/recordings/**/*.test.ts', ...UNIT_WITH_PROCESSES],
          exclude: SLOW,
        },
      },
      {
        extends: true,
        test: { name: 'slow', globalSetup: [BUILD_FIXTURES], include: [...SLOW, 'test/fuzz/**/*.test.ts', 'test/safety/**/*.test.ts'] },
      },
    ],
  },
});
