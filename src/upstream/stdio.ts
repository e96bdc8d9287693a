/**
 * A stdio upstream: one child process holding one MCP session. Lines on its stdout are messages
 * (non-JSON lines are logged and skipped); its stderr goes to the log, and its error line and
 * last lines are kept to explain a crash (stderr.ts). The child runs in its own process group
 * so that closing reaps whatever it spawned too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Logger } from 'pino';
import { maskSecrets } from '../ops/mask.js';
import { ProxyError, unusableAnswer } from '../jsonrpc/errors.js';
import { parseUpstream, type Frame } from '../jsonrpc/message.js';
import { encodeForUpstream } from './encode.js';
import { byteLineSplitter, lineSplitter } from '../jsonrpc/lines.js';
import { StderrRecord } from './stderr.js';
import type { StdioUpstreamSpec, UpstreamConnection, UpstreamEvents } from './types.js';

export interface StdioUpstreamOptions {
  /** Time to wait after closing stdin, then after SIGTERM, before the next step. */
  shutdownGraceMs: number;
  /** Live children, so the process can reap them all on exit. */
  children: Set<ChildProcess>;
}

export function createStdioUpstream(
  spec: StdioUpstreamSpec,
  events: UpstreamEvents,
  log: Logger,
  opts: StdioUpstreamOptions,
): UpstreamConnection {
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    // The proxy's own secrets (cloud keys, tokens, the state secret) stay with the proxy.
    env: { ...(spec.inheritEnv ? process.env : getDefaultEnvironment()), ...spec.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  opts.children.add(child);
  let closing = false;
  let closed = false;
  /** Whether the process ever answered: exiting before that is a failed start, and its stderr says why. */
  let spoke = false;
  let exited: Promise<void> | undefined;

  const finish = (err: ProxyError) => {
    if (closed) return;
    closed = true;
    opts.children.delete(child);
    events.onClose(err);
  };

  // First, so that a failed spawn (ENOENT, EMFILE) is an answer, never an unhandled error.
  child.on('error', (err) => {
    log.error({ command: spec.command, err: err.message }, 'upstream process could not start');
    finish(new ProxyError('UPSTREAM_START_FAILED', `Upstream command "${spec.command}" could not start: ${err.message}`));
  });
  if (!child.stdout || !child.stdin || !child.stderr) {
    // Node gives no pipes when the spawn failed outright; the 'error' above follows.
    return { send() {}, close: async () => undefined };
  }

  child.stdout.on(
    'data',
    byteLineSplitter((line) => {
      const parsed = parseUpstream(line, spec.maxJsonDepth);
      if (!parsed.ok) {
        log.warn(
          { line: line.toString('utf8', 0, 200), why: parsed.error.error?.message },
          'upstream printed a line that is not JSON-RPC; skipped',
        );
        if (parsed.answerTo !== undefined) events.onFailure(parsed.answerTo, unusableAnswer(parsed));
        return;
      }
      spoke = true;
      for (const frame of parsed.frames) deliver(frame);
    }),
  );
  /** One message on: whatever fails while it is handled costs that message, never the process (this runs in a stream's event handler). */
  const deliver = (frame: Frame) => {
    try {
      events.onMessage(frame);
    } catch (err) {
      log.error(
        { err: (err as Error)?.message, line: String(frame.raw ?? '').slice(0, 200) },
        'an upstream message could not be handled; dropped',
      );
    }
  };
  const stderr = recordStderr(child.stderr, log);
  child.stdin.on('error', (err) => log.debug({ err: err.message }, 'upstream stdin closed'));

  child.on('exit', () => killGroup(child, 'SIGKILL')); // whatever it spawned and left behind
  // 'close' comes after stdout and stderr are drained, so the last words of a crash are logged.
  child.on('close', (code, signal) => {
    if (!closing) {
      log.warn(
        { pid: child.pid, code, signal, error: stderr.error, stderr: maskSecrets(stderr.tail.join('\n')) },
        'upstream process exited',
      );
    } else {
      log.debug({ pid: child.pid, code, signal }, 'upstream process reaped');
    }
    finish(exitError(code, signal, spoke || closing, stderr));
  });
  log.debug({ pid: child.pid }, 'upstream process started');

  return {
    send(frame: Frame) {
      if (closed || !child.stdin.writable) return;
      const text = encodeForUpstream(oneLine(frame), events, log);
      if (text !== undefined) child.stdin.write(typeof text === 'string' ? text + '\n' : Buffer.concat([text, NEWLINE]));
    },
    close() {
      exited ??= reap(child, opts.shutdownGraceMs, () => {
        closing = true;
      });
      return exited;
    },
  };
}

const NEWLINE = Buffer.from('\n');

/**
 * One line is one message: a client's own bytes may break lines between tokens. JSON strings
 * cannot hold a raw line break, so each is whitespace, and a space keeps every other byte.
 */
function oneLine(frame: Frame): Frame {
  const raw = frame.raw;
  if (raw === undefined || !raw.includes('\n')) return frame;
  return { msg: frame.msg, raw: raw.toString().replace(/\r?\n/g, ' ') };
}

/** Closes stdin, then signals the process group: SIGTERM, then SIGKILL, each after a grace period. */
function reap(child: ChildProcess, graceMs: number, markClosing: () => void): Promise<void> {
  markClosing();
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    const timers: NodeJS.Timeout[] = [];
    child.once('exit', () => {
      timers.forEach(clearTimeout);
      resolve();
    });
    child.stdin!.end();
    timers.push(setTimeout(() => killGroup(child, 'SIGTERM'), graceMs));
    timers.push(setTimeout(() => killGroup(child, 'SIGKILL'), graceMs * 2));
  });
}

/** A process's stderr, kept to explain a failed start (each line also logged at debug, masked). */
function recordStderr(stream: Readable, log: Logger): StderrRecord {
  const record = new StderrRecord();
  stream.on(
    'data',
    lineSplitter((line) => {
      record.add(line);
      if (log.isLevelEnabled('debug')) log.debug({ stderr: maskSecrets(line) }, 'upstream stderr');
    }),
  );
  return record;
}

/**
 * Why the session ended when the process did: a close (it had answered, or was being stopped), or a failed
 * start that its stderr explains.
 */
function exitError(code: number | null, signal: NodeJS.Signals | null, answered: boolean, stderr: StderrRecord): ProxyError {
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  if (answered) return new ProxyError('UPSTREAM_CLOSED', `Upstream process ${how}`, { exitCode: code, signal });
  // The cause first: a client, /readyz and --fail-fast may show only the start of the message.
  const { error, last } = stderr.summary();
  const said = [error && `: ${error}`, last && `; its last output: ${last}`].filter(Boolean).join('') || ' (it wrote nothing to stderr)';
  return new ProxyError('UPSTREAM_START_FAILED', `Upstream process ${how} before it answered${said}`, { exitCode: code, signal });
}

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}
