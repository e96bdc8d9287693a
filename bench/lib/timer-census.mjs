/**
 * Preloaded into the proxy by the soak (NODE_OPTIONS=--import): counts the timers alive, unref'd
 * ones included (the process's active-resource list leaves those out), and writes the count to
 * SOAK_TIMER_FILE every 200 ms.
 */
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';

const live = new Set();
createHook({
  init(id, type) {
    if (type === 'Timeout') live.add(id);
  },
  destroy(id) {
    live.delete(id);
  },
}).enable();
setInterval(() => writeFileSync(process.env.SOAK_TIMER_FILE, String(live.size)), 200).unref();
