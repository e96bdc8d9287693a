/**
 * A Streamable HTTP upstream's server-sent event streams: reading them (eventsource-parser, linear
 * in the stream however it is chunked; each message's data to `onData`, and where a resume would
 * start, kept even when the stream breaks off), resuming a dropped one with Last-Event-ID, and
 * holding the session's GET stream open with backoff.
 */
import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';
import type { Logger } from 'pino';
import type { CallSignal } from './call-abort.js';

type Body = AsyncIterable<Buffer>;

interface StreamLoop {
  /** GETs the stream (after `state.lastEventId`); undefined when the server has none. */
  open(state: StreamState, signal: AbortSignal): Promise<Body | undefined>;
  read(body: Body, state: StreamState): Promise<void>;
  signal: AbortSignal;
  /** Delay before trying again when the server sent no `retry`. */
  defaultRetryMs: number;
  log: Logger;
}

/** Where a dropped stream resumes: after this event id, this long after it dropped. */
export interface StreamState {
  lastEventId?: string;
  retryMs?: number;
}

/** Reads an SSE body to its end; `onData` gets each `message` event's data (priming events, with no data, are skipped). */
export async function readEvents(body: Body, state: StreamState, onData: (data: string) => void): Promise<void> {
  const feed = eventReader(state, onData);
  for await (const chunk of body) feed(chunk);
}

/** An SSE body's reader fed chunk by chunk as they come (see readEvents); what `onData` throws, `feed` throws. */
export function eventReader(state: StreamState, onData: (data: string) => void): (chunk: Buffer) => void {
  const parser = createParser({
    onEvent: (ev) => {
      if (ev.id !== undefined) state.lastEventId = ev.id;
      if ((ev.event ?? 'message') === 'message' && ev.data !== '') onData(ev.data);
    },
    onRetry: (ms) => (state.retryMs = ms),
  });
  const decoder = new StringDecoder('utf8'); // a character may be split across chunks
  return (chunk) => parser.feed(decoder.write(chunk));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: CallSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Resumes a dropped stream with GET + Last-Event-ID after the server's `retry`, until `done()` or `maxResumes` attempts. */
export async function resumeStream(o: StreamLoop & { state: StreamState; done(): boolean; maxResumes: number }): Promise<void> {
  for (let attempt = 0; attempt < o.maxResumes && !o.done() && !o.signal.aborted; attempt++) {
    await sleep(o.state.retryMs ?? o.defaultRetryMs, o.signal);
    if (o.signal.aborted) return;
    try {
      const body = await o.open(o.state, o.signal);
      if (!body) return;
      await o.read(body, o.state);
    } catch (err) {
      if (o.signal.aborted) return;
      o.log.debug({ err: (err as Error).message, attempt }, 'resuming the upstream stream failed; retrying');
    }
  }
}

/**
 * Holds a stream until `signal` aborts or the server has none: reconnects when it drops, backing off while it
 * fails (retry, 2×, 4×… up to 30 s).
 */
export async function holdStream(o: StreamLoop & { closed(): boolean }): Promise<void> {
  const state: StreamState = {};
  let failures = -1; // -1: the first attempt goes without delay
  while (!o.closed() && !o.signal.aborted) {
    try {
      if (failures >= 0) await sleep(Math.min((state.retryMs ?? o.defaultRetryMs) * 2 ** failures, 30_000), o.signal);
      if (o.closed() || o.signal.aborted) return;
      failures++;
      const body = await o.open(state, o.signal);
      if (!body) return;
      failures = 0;
      await o.read(body, state);
    } catch (err) {
      if (o.closed() || o.signal.aborted) return;
      o.log.debug({ err: (err as Error).message }, 'upstream GET stream dropped; reconnecting');
    }
  }
}
