/**
 * How much fuzzing a run does. The suite runs a small, seed-stable sample of every target
 * (FUZZ_RUNS 200, FUZZ_SEED 20261123); `npm run fuzz` runs 10,000 cases per target with a fresh
 * seed, printed so that a failure can be replayed with FUZZ_SEED=<seed> FUZZ_RUNS=<runs>.
 */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 200);
export const FUZZ_SEED = process.env.FUZZ_SEED === 'random' ? Date.now() % 2 ** 31 : Number(process.env.FUZZ_SEED ?? 20261123);
export const fuzzParams = { numRuns: FUZZ_RUNS, seed: FUZZ_SEED, endOnFailure: true } as const;

if (process.env.FUZZ_SEED === 'random') console.info(`fuzzing ${FUZZ_RUNS} cases per target, FUZZ_SEED=${FUZZ_SEED}`);
