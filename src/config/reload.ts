/**
 * Config changes without a restart: what a new config changes live, what needs a restart, and
 * a watcher that notices the file being saved (editors often replace it, so the directory is
 * watched). Validation happens before anything is applied; see main.ts and Gateway.reload.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { Config } from './schema.js';

/**
 * Sections a running proxy takes over: rules, variants, shaping limits, log level (modern.cache and profiles'
 * paths are told apart in diffConfig).
 */
const LIVE: Array<keyof Config> = ['contentNegotiation', 'serverVariants', 'logLevel'];

/** The top-level sections (and modern.cache) that differ, split into applied and restart-only. */
export function diffConfig(running: Config, next: Config): { live: string[]; restart: string[] } {
  const live: string[] = [];
  const restart: string[] = [];
  for (const key of Object.keys(next) as Array<keyof Config>) {
    if (JSON.stringify(running[key]) === JSON.stringify(next[key])) continue;
    if (LIVE.includes(key)) live.push(key);
    else if (key === 'modern' && JSON.stringify({ ...running.modern, cache: null }) === JSON.stringify({ ...next.modern, cache: null }))
      live.push('modern.cache');
    else if (key === 'profiles') {
      live.push(key);
      // A profile's path is a route of the HTTP front, made at start: new paths are served after a restart.
      if (JSON.stringify(profilePaths(running)) !== JSON.stringify(profilePaths(next))) restart.push('profiles.*.path');
    } else restart.push(key);
  }
  return { live, restart };
}

function profilePaths(config: Config): string[] {
  return Object.values(config.profiles)
    .flatMap((p) => (p.path === undefined ? [] : [p.path]))
    .sort();
}

/** Calls `onChange` (debounced) when `file` is written or replaced; returns the watcher to close. */
export function watchConfigFile(file: string, onChange: () => void, debounceMs = 250): FSWatcher {
  const path = resolve(file);
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  const watcher = watch(dirname(path), (_event, changed) => {
    if (changed !== null && changed.toString() !== name) return;
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  });
  watcher.unref();
  return watcher;
}
