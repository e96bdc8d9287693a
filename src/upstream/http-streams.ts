/**
 * Reading a Streamable HTTP upstream's server-sent events (eventsource-parser, linear in the
 * stream however it is chunked): each message's data to `onData`, and where a resume would start
 * (the last event id, the server's `retry`), kept even when the stream breaks off.
 */
import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';

/** Where a dropped stream resumes: after this event id, this long after it dropped. */
export interface StreamState {
  lastEventId?: string;
  retryMs?: number;
}

/** Reads an SSE body to its end; `onData` gets each `message` event's data (priming events, with no data, are skipped). */
export async function readEvents(body: AsyncIterable<Buffer>, state: StreamState, onData: (data: string) => void): Promise<void> {
  const parser = createParser({
    onEvent: (ev) => {
      if (ev.id !== undefined) state.lastEventId = ev.id;
      if ((ev.event ?? 'message') === 'message' && ev.data !== '') onData(ev.data);
    },
    onRetry: (ms) => (state.retryMs = ms),
  });
  const decoder = new StringDecoder('utf8'); // a character may be split across chunks
  for await (const chunk of body) parser.feed(decoder.write(chunk));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
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
