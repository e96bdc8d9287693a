/**
 * A server-sent events reader: feed text chunks, get one callback per dispatched event.
 * Implements the parts of the WHATWG event-stream format MCP uses (data, id, retry, comments).
 */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export interface SseReader {
  feed(chunk: string): void;
  /** The last `id:` seen, for resuming with Last-Event-ID. */
  readonly lastEventId: string | undefined;
  /** The last `retry:` seen, in milliseconds. */
  readonly retryMs: number | undefined;
}

export function createSseReader(onEvent: (event: SseEvent) => void): SseReader {
  let buffer = '';
  let data: string[] = [];
  let event = '';
  let id: string | undefined;
  let lastEventId: string | undefined;
  let retryMs: number | undefined;

  const line = (text: string) => {
    if (text === '') {
      if (data.length > 0) onEvent({ event: event || 'message', data: data.join('\n'), id });
      data = [];
      event = '';
      id = undefined;
      return;
    }
    if (text.charCodeAt(0) === 58) return; // ':' comment / keep-alive
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) lastEventId = id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value);
  };

  return {
    feed(chunk) {
      buffer += chunk;
      let start = 0;
      for (;;) {
        const nl = buffer.indexOf('\n', start);
        if (nl === -1) break;
        const end = nl > start && buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
        line(buffer.slice(start, end));
        start = nl + 1;
      }
      buffer = buffer.slice(start);
    },
    get lastEventId() {
      return lastEventId;
    },
    get retryMs() {
      return retryMs;
    },
  };
}
