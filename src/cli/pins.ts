/**
 * `pins list | accept | reject`: the operator's side of pinned tool definitions
 * (upstream.toolPins, src/upstream/tool-pins.ts). Accepting pins the refused digest in place of
 * the old one; rejecting drops the refusal and keeps the old one. Either rewrites the file
 * atomically; the running proxy takes it over on a reload (SIGHUP), or at its next write of the
 * file at the latest.
 */
import { UsageError } from '../jsonrpc/errors.js';
import { loadConfig } from '../config/load.js';
import { pinsText, readPins, short, writeAtomically, PinsFileError } from '../upstream/tool-pins.js';
import { toolPinsPath } from './check.js';

export interface PinsRequest {
  action: 'list' | 'accept' | 'reject';
  tools: string[];
  all: boolean;
}

/** What the command did, as printed; throws a UsageError for what it cannot do (nothing is written then). */
export function pinsCommand(request: PinsRequest, configFile: string | undefined, overrides: Record<string, unknown>): string {
  const config = loadConfig({ file: configFile, overrides });
  const file = toolPinsPath(config, configFile);
  if (!file) throw new UsageError(`${configFile ?? 'the config'} sets no upstream.toolPins: no tool definitions are pinned in a file`);
  let entries;
  try {
    entries = readPins(file).entries;
  } catch (err) {
    if (err instanceof PinsFileError) throw new UsageError(err.message);
    throw err;
  }
  const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : 1));
  const refused = sorted.filter(([, pin]) => pin.refused).map(([name]) => name);
  if (request.action === 'list') {
    const lines = sorted.map(([name, pin]) =>
      pin.refused ? `${name}  ${short(pin.sha256)}  refused: ${short(pin.refused)}` : `${name}  ${short(pin.sha256)}`,
    );
    return `${file}: ${entries.size} tools pinned, ${refused.length} refused\n${lines.join('\n')}`;
  }
  const names = request.all ? refused : request.tools;
  const missing = names.filter((name) => !entries.get(name)?.refused);
  if (missing.length)
    throw new UsageError(
      `${file}: no refused definition of ${missing.map((n) => JSON.stringify(n)).join(', ')}` +
        (refused.length ? ` (refused now: ${refused.join(', ')})` : ' (no tool is refused now)'),
    );
  const done: string[] = [];
  for (const name of names) {
    const pin = entries.get(name)!;
    done.push(
      request.action === 'accept'
        ? `accepted ${name}: ${short(pin.sha256)} → ${short(pin.refused!)}`
        : `rejected ${name}'s new definition ${short(pin.refused!)}: ${short(pin.sha256)} stays pinned`,
    );
    entries.set(name, { sha256: request.action === 'accept' ? pin.refused! : pin.sha256 });
  }
  writeAtomically(file, pinsText(entries));
  const next = names.length ? '\nReload the proxy to serve them: kill -HUP <its pid> (or save its config file)' : '';
  return `${done.join('\n') || 'no tool is refused: nothing to do'}${next}`;
}
