// Node 20 shim for @modelcontextprotocol/conformance.
//
// The conformance CLI (dist/index.js) does `import { globSync, ... } from 'fs'`.
// fs.globSync only exists from Node 22, so on Node 20 the import fails at link
// time ("does not provide an export named 'globSync'") before any command runs.
//
// Usage:
//   node --import ./test/conformance/globsync-shim.mjs \
//        node_modules/@modelcontextprotocol/conformance/dist/index.js server ...
//
// On the main thread this file registers itself as a module-customization hook
// (module.register). In the hooks thread it provides resolve/load hooks that
// redirect the conformance package's 'fs' / 'node:fs' imports to a generated
// module which re-exports node:fs and adds a small globSync.
//
// The suite only calls globSync('**/checks.json', { cwd }) (in `tier-check`,
// to collect result files), so the implementation below supports `*`, `?` and
// `**` path segments, a `cwd` option, string or string[] patterns, and returns
// cwd-relative paths, like fs.globSync. It is deliberately not a full glob.
import { isMainThread } from 'node:worker_threads';
import { register } from 'node:module';

const SHIM_URL = `${import.meta.url.split('?')[0]}?fs-with-globsync`;

if (isMainThread) {
  register(import.meta.url);
}

/** Only rewrite 'fs' for the conformance package; everything else is untouched. */
export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
    return { url: SHIM_URL, format: 'module', shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url !== SHIM_URL) return nextLoad(url, context);
  // A local `export function globSync` shadows any globSync coming through
  // `export *`, so this stays valid on Node versions that have fs.globSync.
  const source = `
import fs from 'node:fs';
import path from 'node:path';
export * from 'node:fs';
export default fs;
${globSyncSource}
export const globSync = fs.globSync ?? shimGlobSync;
`;
  return { format: 'module', source, shortCircuit: true };
}

// Source text of the replacement, kept as a real function for readability.
function shimGlobSync(patterns, options = {}) {
  /* global fs, path -- this source runs inside the patched module, which has fs and path in scope */
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const toRegExp = (glob) => {
    // '**/' matches zero or more directories, '*' and '?' stay within a segment.
    let re = '';
    for (let i = 0; i < glob.length; i++) {
      const ch = glob[i];
      if (ch === '*' && glob[i + 1] === '*') {
        if (glob[i + 2] === '/') {
          re += '(?:.*/)?';
          i += 2;
        } else {
          re += '.*';
          i += 1;
        }
      } else if (ch === '*') re += '[^/]*';
      else if (ch === '?') re += '[^/]';
      else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    return new RegExp(`^${re}$`);
  };
  const matchers = [].concat(patterns).map((p) => toRegExp(String(p).replace(/\\/g, '/')));
  const out = [];
  const walk = (rel) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (matchers.some((m) => m.test(child))) out.push(child.split('/').join(path.sep));
      if (entry.isDirectory()) walk(child);
    }
  };
  walk('');
  return out;
}
const globSyncSource = shimGlobSync.toString();
