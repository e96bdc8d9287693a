/**
 * Newline-delimited framing: feed chunks, get complete lines (without the newline or a trailing
 * CR). Used for stdio on both sides. Bytes are decoded as a stream, so a multi-byte character
 * split across two chunks arrives whole.
 */
import { StringDecoder } from 'node:string_decoder';

export function lineSplitter(onLine: (line: string) => void): (chunk: Buffer | string) => void {
  let pending = '';
  const decoder = new StringDecoder('utf8');
  return function feed(chunk) {
    const text = pending + (typeof chunk === 'string' ? chunk : decoder.write(chunk));
    let start = 0;
    let nl = text.indexOf('\n', pending.length); // the pending part has none
    while (nl !== -1) {
      const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      if (end > start) onLine(text.slice(start, end));
      start = nl + 1;
      nl = text.indexOf('\n', start);
    }
    pending = text.slice(start);
  };
}

/**
 * The same framing on bytes, for messages relayed as they came: no decoding, and a line is held
 * once (a line that spans chunks is joined; a short one is copied, so that it does not keep its
 * whole chunk alive).
 */
export function byteLineSplitter(onLine: (line: Buffer) => void): (chunk: Buffer) => void {
  let parts: Buffer[] = [];
  let size = 0;
  return function feed(chunk) {
    let start = 0;
    let nl = chunk.indexOf(0x0a);
    while (nl !== -1) {
      const piece = chunk.subarray(start, nl);
      let line: Buffer;
      if (parts.length > 0) {
        parts.push(piece);
        line = Buffer.concat(parts, size + piece.length);
        parts = [];
        size = 0;
      } else line = piece.length * 2 < chunk.length ? Buffer.from(piece) : piece;
      if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
      if (line.length > 0) onLine(line);
      start = nl + 1;
      nl = chunk.indexOf(0x0a, start);
    }
    if (start < chunk.length) {
      parts.push(chunk.subarray(start));
      size += chunk.length - start;
    }
  };
}
