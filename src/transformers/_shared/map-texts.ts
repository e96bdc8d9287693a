/**
 * Applies a text → text function to every text a result carries for people: tool result text
 * blocks, prompt message text, and resource text contents of the given mimeTypes (optionally
 * renaming one of them). Returns undefined when nothing changed, so an untouched result keeps
 * its original bytes.
 */
import { isTextBlock, type McpResult } from '../contract.js';

export interface TextScope {
  /** Resource contents with these mimeTypes are mapped (`''`: no mimeType); others are left alone. */
  mimeTypes: readonly string[];
  /** A new mimeType for mapped resource contents of `from`. */
  rename?: { from: string; to: string };
}

export function mapTexts(result: McpResult, method: string, fn: (text: string) => string, scope: TextScope): McpResult | undefined {
  if (method === 'tools/call' && Array.isArray(result.content) && result.isError !== true) {
    const content = mapBlocks(result.content, fn);
    return content === result.content ? undefined : { ...result, content };
  }
  if (method === 'prompts/get' && Array.isArray(result.messages)) return mapMessages(result, result.messages, fn);
  if (method === 'resources/read' && Array.isArray(result.contents)) return mapContents(result, result.contents, fn, scope);
  return undefined;
}

/** The blocks with `fn` applied to each text block; the same array when no text changed. */
function mapBlocks(blocks: unknown[], fn: (text: string) => string): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < blocks.length; i++) {
    const block = mapBlock(blocks[i], fn);
    if (block === blocks[i]) continue;
    out ??= blocks.slice();
    out[i] = block;
  }
  return out ?? blocks;
}

/** A text block with `fn` applied to its text; the same block when the text did not change. */
function mapBlock(block: unknown, fn: (text: string) => string): unknown {
  if (!isTextBlock(block)) return block;
  const text = fn(block.text);
  return text === block.text ? block : { ...block, text };
}

function mapMessages(result: McpResult, messages: unknown[], fn: (text: string) => string): McpResult | undefined {
  let changed = false;
  const mapped = messages.map((m) => {
    if (!m || typeof m !== 'object') return m;
    const message = m as Record<string, unknown>;
    const content = Array.isArray(message.content) ? mapBlocks(message.content, fn) : mapBlock(message.content, fn);
    if (content === message.content) return m;
    changed = true;
    return { ...message, content };
  });
  return changed ? { ...result, messages: mapped } : undefined;
}

function mapContents(result: McpResult, contents: unknown[], fn: (text: string) => string, scope: TextScope): McpResult | undefined {
  let changed = false;
  const mapped = contents.map((item) => {
    const c = item as Record<string, unknown> | null;
    const mimeType = typeof c?.mimeType === 'string' ? c.mimeType : '';
    if (typeof c?.text !== 'string' || !scope.mimeTypes.includes(mimeType)) return item;
    const text = fn(c.text);
    if (text === c.text) return item;
    changed = true;
    return { ...c, text, ...(scope.rename && mimeType === scope.rename.from ? { mimeType: scope.rename.to } : {}) };
  });
  return changed ? { ...result, contents: mapped } : undefined;
}
