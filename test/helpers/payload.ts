/** What a result gives a client to read, for "no fact lost" checks. */
import { isPlainObject } from '../../src/transformers/_shared/json.js';
import type { McpResult } from '../../src/transformers/contract.js';

/** The texts and data a result gives a client: text blocks, structuredContent, resource texts, prompt messages. */
export function payload(result: McpResult): unknown[] {
  const out: unknown[] = [];
  const block = (b: unknown) => {
    if (!isPlainObject(b)) return;
    if (typeof b.text === 'string') out.push(b.text);
    if (isPlainObject(b.resource) && typeof b.resource.text === 'string') out.push(b.resource.text);
  };
  if (Array.isArray(result.content)) result.content.forEach(block);
  if (result.structuredContent !== undefined) out.push(result.structuredContent);
  if (Array.isArray(result.contents)) result.contents.forEach(block);
  if (Array.isArray(result.messages)) result.messages.forEach((m) => (isPlainObject(m) ? block(m.content) : undefined));
  return out;
}
