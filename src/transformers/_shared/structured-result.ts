/**
 * The common frame of transformers that turn a tool result's text into `structuredContent`
 * (json-extract, pattern-extract): which results qualify and what text they read, and how the
 * new result is put together so that nothing is lost.
 */
import { contentOf, isTextBlock, type McpResult, type TextBlock } from '../contract.js';
import type { Budget } from '../budget.js';
import { hasFactBeyond } from './fact-coverage.js';
import { writeJson, type Json } from './json.js';

export interface ToolText {
  content: unknown[];
  texts: TextBlock[];
  /** The text blocks joined, as one text to read data from. */
  text: string;
}

/** The text of a tools/call result that has none of its own structure yet, or undefined. */
export function toolText(result: McpResult): ToolText | undefined {
  if (result.structuredContent !== undefined || result.isError === true) return undefined;
  const content = contentOf(result);
  const texts = content?.filter(isTextBlock) ?? [];
  if (!content || texts.length === 0) return undefined;
  return { content, texts, text: texts.map((b) => b.text).join('\n\n') };
}

/**
 * The result with `data` (a JSON value) as structuredContent: its JSON text first (with
 * `keepText`), the original text blocks after it unless the data holds every fact of the text
 * (or `whole`: the text was the data), then the blocks that are not text. `written`: the
 * data's JSON text, when the caller has it.
 */
export function withStructured(
  result: McpResult,
  from: ToolText,
  data: Record<string, unknown>,
  keepText: boolean,
  budget?: Budget,
  whole = false,
  written?: string,
): McpResult {
  const json = keepText || !whole ? writeJson(data as Json, written) : '';
  const partial = !whole && hasFactBeyond(from.text, data, json, budget);
  const copy = keepText ? [{ type: 'text', text: json }] : [];
  return {
    ...result,
    content: [...copy, ...(partial ? from.texts : []), ...from.content.filter((b) => !isTextBlock(b))],
    structuredContent: data,
  };
}
