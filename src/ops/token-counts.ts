/**
 * Tokens a model would read from a result, counted with the o200k_base encoding
 * (gpt-tokenizer; other models' tokenizers differ by a few percent, the savings far less). Off
 * by default: the encoding costs ~70 MB of memory and counting ~0.1 ms per KB, so it is loaded
 * only when `contentNegotiation.tokens.count` is on, and results larger than `maxChars` are not
 * counted. Counting happens after the answer has gone out.
 */
import type { McpResult } from '../transformers/contract.js';

export type CountTokens = (text: string) => number;

/** contentNegotiation.tokens: whether to count, and results with more text than `maxChars` are not. */
export interface TokenCountSettings {
  count: boolean;
  maxChars: number;
}

/** The tokenizer, loaded on demand (a dynamic import keeps it out of memory when unused). */
export async function loadTokenizer(): Promise<CountTokens> {
  const { countTokens } = await import('gpt-tokenizer/encoding/o200k_base');
  return (text) => countTokens(text);
}

/**
 * The text of a result as a model reads it: text blocks of tool results and prompt messages,
 * resource text contents, and the entries of a list as JSON (the way tools are given to a
 * model). Binary content and `_meta` are not read.
 */
export function readableText(method: string, result: McpResult): string {
  const parts: string[] = [];
  const addBlock = (block: unknown) => {
    const b = block as { type?: unknown; text?: unknown };
    if (b && b.type === 'text' && typeof b.text === 'string') parts.push(b.text);
  };
  if (Array.isArray(result.content)) result.content.forEach(addBlock);
  if (Array.isArray(result.messages))
    for (const m of result.messages) (Array.isArray(m?.content) ? m.content : [m?.content]).forEach(addBlock);
  if (Array.isArray(result.contents)) for (const c of result.contents) if (typeof c?.text === 'string') parts.push(c.text);
  if (parts.length === 0 && method === 'tools/call' && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  for (const key of ['tools', 'prompts', 'resources', 'resourceTemplates'])
    if (Array.isArray(result[key])) parts.push(JSON.stringify(result[key]));
  return parts.join('\n');
}

/**
 * Tokens of a result as the upstream sent it and as the client got it (`after` undefined: unchanged); undefined
 * when either text is over `maxChars`.
 */
export function countTokensOf(
  count: CountTokens,
  method: string,
  before: McpResult,
  after: McpResult | undefined,
  maxChars = Infinity,
): { in: number; out: number } | undefined {
  const textIn = readableText(method, before);
  const textOut = after === undefined ? textIn : readableText(method, after);
  if (textIn.length > maxChars || textOut.length > maxChars) return undefined;
  const tokensIn = count(textIn);
  return { in: tokensIn, out: textOut === textIn ? tokensIn : count(textOut) };
}

/** Counts of one result: what the upstream sent and what the client got. */
export interface TokenCount {
  method: string;
  tool: string;
  in: number;
  out: number;
}

/** Distinct tool labels in /metrics, at most; tool names come from clients, so later ones are "other". */
const MAX_TOOL_LABELS = 200;

export class TokenMeter {
  private readonly tools = new Set<string>();

  constructor(
    private readonly count: CountTokens,
    private readonly maxChars: number,
    private readonly record: (c: TokenCount) => void,
    private readonly skipped: () => void,
  ) {}

  /** Counts `before` and `after` (undefined: unchanged) once the current work is done. */
  observe(method: string, name: string | undefined, before: McpResult, after: McpResult | undefined): void {
    setImmediate(() => {
      const counted = countTokensOf(this.count, method, before, after, this.maxChars);
      if (!counted) return this.skipped();
      this.record({ method, tool: this.toolLabel(method, before.isError === true ? undefined : name), ...counted });
    });
  }

  /** The tool's name for a result it produced (an error may answer a name the client made up). */
  private toolLabel(method: string, name: string | undefined): string {
    if (method !== 'tools/call' || name === undefined) return '';
    if (this.tools.has(name)) return name;
    if (this.tools.size >= MAX_TOOL_LABELS) return 'other';
    this.tools.add(name);
    return name;
  }
}
