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
    let nl = text.indexOf('\n', start);
    while (nl !== -1) {
      const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      if (end > start) onLine(text.slice(start, end));
      start = nl + 1;
      nl = text.indexOf('\n', start);
    }
    pending = text.slice(start);
  };
}
