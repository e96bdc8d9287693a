/**
 * What a stdio upstream wrote to stderr, kept to explain a failed start. A crash prints its
 * cause first and its stack last (Node: the source line, `Error: …`, then `    at …` frames and
 * `Node.js v20…`), so the last lines alone often miss the cause: the line that looks most like
 * the error is kept too, however much follows it (the last `Name: message` line: a warning
 * printed early must not hide the crash after it).
 */
import { maskSecrets } from '../ops/mask.js';

const TAIL_LINES = 20;
/** Lines of the tail a client, a probe or --fail-fast sees next to the error line. */
const SHOWN_LINES = 4;
const LINE_CHARS = 300;
/** Characters of one line looked at; a longer line is cut there, far past what is shown. */
const SCAN_CHARS = 4096;

/** Words that make a line look like a failure. */
const ERROR_WORDS = /error|exception|fatal|panic|cannot|can't|could not|not set|missing|denied|refused|invalid|ENOENT|EACCES/i;
/** `Name: message` or `Name [CODE]: message` (TypeError: …, Error [ERR_X]: …, KeyError: …, fatal: …). */
const NAMED = /^(?:Uncaught )?[A-Za-z_$][\w.$]*(?: \[[\w-]+\])?: \S/;
/** A stack frame (JavaScript `at …`, Python `File "…"`, Go `goroutine …`, source carets): never the cause itself. */
const FRAME = /^(?:at |File "|goroutine |\^)/;

export class StderrRecord {
  /** The last lines, as written. */
  readonly tail: string[] = [];
  /** The error line, masked and clipped. */
  private errorLine: string | undefined;
  /** 2: a `Name: message` line (a later one replaces it); 1: a line with an error word (kept until a better one). */
  private rank = 0;

  add(line: string): void {
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
    const text = line.trim().slice(0, SCAN_CHARS);
    if (text === '' || FRAME.test(text) || !ERROR_WORDS.test(text)) return;
    const rank = NAMED.test(text) ? 2 : 1;
    if (rank > this.rank || rank === 2) {
      this.rank = rank;
      this.errorLine = shown(text);
    }
  }

  /** The error line, if one was seen (trimmed, masked). */
  get error(): string | undefined {
    return this.errorLine;
  }

  /**
   * For a client, a probe or --fail-fast: the error line, and the last few lines (the error
   * line not repeated), each trimmed and masked; both absent when the process wrote nothing.
   */
  summary(): { error?: string; last?: string } {
    const last = this.tail
      .map((l) => shown(l.trim().slice(0, SCAN_CHARS)))
      .filter((l) => l !== '' && l !== this.errorLine)
      .slice(-SHOWN_LINES);
    return {
      ...(this.errorLine === undefined ? {} : { error: this.errorLine }),
      ...(last.length ? { last: last.join(' | ').slice(0, 1000) } : {}),
    };
  }
}

/** Masked first, then clipped: a secret cut in two by the clip would escape the masking patterns. */
function shown(text: string): string {
  const masked = maskSecrets(text);
  return masked.length > LINE_CHARS ? `${masked.slice(0, LINE_CHARS)}…` : masked;
}
