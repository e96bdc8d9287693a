/**
 * Exact contents: a result that is a file's or a document's bytes rather than a presentation of
 * data must reach the client as the upstream sent it, whatever the client prefers, or an agent
 * that edits a file from what it read breaks it. The proxy knows a result is exact contents when
 * - a `verbatim: true` rule matches it (the built-in rules name the reference servers' file
 *   tools; your own rules name yours), or
 * - it carries resource contents whose URI is a `file:` URI (a `resources/read` of a file, or a
 *   file embedded in a tool result or prompt): files are files, whatever the rules say.
 * Such a result keeps its text byte-exact; the one thing shaping may add is `structuredContent`
 * to a tool result that had none (or the data in place of its wrapped text), and only when its whole text is one JSON document (format=json
 * reads the JSON in a .json file): data picked out of a diff or a source file would be one line
 * of it, most often the line a diff removed.
 */
import { isObject } from '../jsonrpc/message.js';
import { contentOf, isTextBlock, type McpResult } from '../transformers/contract.js';
import { parseJsonDocument } from '../transformers/_shared/json.js';
import { isWrappedText } from '../transformers/_shared/wrapped-text.js';

/** Why a result is exact contents, or undefined when it may be reshaped. */
export function fileContentsIn(result: McpResult): string | undefined {
  for (const item of resourceContents(result)) {
    if (typeof item.uri === 'string' && item.uri.slice(0, 5).toLowerCase() === 'file:')
      return `it holds the contents of ${item.uri.slice(0, 200)}`;
  }
  return undefined;
}

/** Resource contents in a result: `contents` of resources/read, embedded resources in tool content and prompt messages. */
function* resourceContents(result: McpResult): Generator<Record<string, unknown>> {
  if (Array.isArray(result.contents)) for (const c of result.contents) if (isObject(c)) yield c;
  if (Array.isArray(result.content)) for (const block of result.content) if (embedsResource(block)) yield block.resource;
  if (Array.isArray(result.messages))
    for (const m of result.messages) if (isObject(m) && embedsResource(m.content)) yield m.content.resource;
}

function embedsResource(block: unknown): block is { resource: Record<string, unknown> } {
  return isObject(block) && block.type === 'resource' && isObject(block.resource);
}

/**
 * The upstream's result with only what may be added to exact contents: `structuredContent`
 * from the shaped result, when its text is one JSON document and the upstream's had none, or
 * had only the text wrapped (`{"result": <the text>}`, which may become `{"result": <its data>}`).
 * Undefined: the upstream's result as it was.
 */
export function keepExact(upstream: McpResult, shaped: McpResult): McpResult | undefined {
  const data = shaped.structuredContent;
  if (data === undefined) return undefined;
  if (upstream.structuredContent !== undefined && !(isWrappedText(upstream) && isObject(data) && isObject(data.result))) return undefined;
  const text = contentOf(upstream)
    ?.filter(isTextBlock)
    .map((b) => b.text)
    .join('\n\n');
  if (text === undefined || parseJsonDocument(text) === undefined) return undefined;
  return { ...upstream, structuredContent: data };
}

/**
 * Whether shaping could change anything of this exact result (only a tool result without structuredContent of
 * its own can gain some; give it unwrapped).
 */
export function mayGainStructure(method: string, result: McpResult): boolean {
  return method === 'tools/call' && result.structuredContent === undefined && result.isError !== true;
}
