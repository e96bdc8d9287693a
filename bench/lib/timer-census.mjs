/**
 * Preloaded into the proxy by the soak (NODE_OPTIONS=--import): counts the timers alive, unref'd
 * ones included (the process's active-resource list leaves those out), and writes the count to
 * SOAK_TIMER_FILE every 200 ms (by renaming, so a reader never sees a half-written file).
 */
import { createHook } from 'node:async_hooks';
import { renameSync, writeFileSync } from 'node:fs';

const live = new Set();
createHook({
  init(id, type) {
    if (type === 'Timeout') live.add(id);
  },
  destroy(id) {
    live.delete(id);
  },
}).enable();
const file = process.env.SOAK_TIMER_FILE;
setInterval(() => {
  writeFileSync(`${file}.tmp`, String(live.size));
  renameSync(`${file}.tmp`, file);
}, 200).unref();
