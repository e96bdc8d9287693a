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
  let changed = false;
  const mapBlock = (block: unknown) => {
    if (!isTextBlock(block)) return block;
    const text = fn(block.text);
    if (text === block.text) return block;
    changed = true;
    return { ...block, text };
  };
  if (method === 'tools/call' && Array.isArray(result.content) && result.isError !== true) {
    const content = result.content.map(mapBlock);
    return changed ? { ...result, content } : undefined;
  }
  if (method === 'prompts/get' && Array.isArray(result.messages)) {
    const messages = result.messages.map((m: Record<string, unknown>) => {
      if (!m || typeof m !== 'object') return m;
      const content = Array.isArray(m.content) ? m.content.map(mapBlock) : mapBlock(m.content);
      return content === m.content ? m : { ...m, content };
    });
    return changed ? { ...result, messages } : undefined;
  }
  if (method === 'resources/read' && Array.isArray(result.contents)) {
    const contents = result.contents.map((c: Record<string, unknown>) => {
      const mimeType = typeof c?.mimeType === 'string' ? c.mimeType : '';
      if (typeof c?.text !== 'string' || !scope.mimeTypes.includes(mimeType)) return c;
      const text = fn(c.text);
      if (text === c.text) return c;
      changed = true;
      return { ...c, text, ...(scope.rename && mimeType === scope.rename.from ? { mimeType: scope.rename.to } : {}) };
    });
    return changed ? { ...result, contents } : undefined;
  }
  return undefined;
}
