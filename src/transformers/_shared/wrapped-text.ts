/**
 * Wrapped results: FastMCP and the Python SDK send the `str` a tool returns twice, as its one
 * text block and as `structuredContent: {"result": <the text>}`, under an outputSchema whose one
 * property is that string. Such a result is shaped as the text it is: the rules unwrap it, the
 * steps shape the text, and the result is wrapped again around what they made (the new text, or
 * the data a step read from it), so that text and `structuredContent` agree. Data goes under
 * `result` only where the client was shown a schema that allows it: json-extract shows a
 * widened one in tools/list (`widenedSchema`).
 */
import { contentOf, isTextBlock, type McpResult } from '../contract.js';
import { isPlainObject } from './json.js';

/** Whether the result's structuredContent is `{ result: <the text of its one text block> }`. */
export function isWrappedText(result: McpResult): boolean {
  const s = result.structuredContent;
  if (result.isError === true || !isPlainObject(s) || typeof s.result !== 'string') return false;
  for (const key in s) if (key !== 'result') return false;
  const texts = contentOf(result)?.filter(isTextBlock);
  return texts !== undefined && texts.length === 1 && texts[0].text === s.result;
}

/** The result without its structuredContent: what the steps shape. */
export function unwrapped(result: McpResult): McpResult {
  const out = { ...result };
  delete out.structuredContent;
  return out;
}

/**
 * The shaped result with structuredContent that says what it says: `{ result: <data> }` when a
 * step read data from the text, else `{ result: <the text of its one text block> }`. Undefined
 * when it has no one text to wrap.
 */
export function rewrapped(shaped: McpResult): McpResult | undefined {
  if (shaped.structuredContent !== undefined) return { ...shaped, structuredContent: { result: shaped.structuredContent } };
  const texts = contentOf(shaped)?.filter(isTextBlock);
  if (texts === undefined || texts.length !== 1) return undefined;
  return { ...shaped, structuredContent: { result: texts[0].text } };
}

/** What the steps are told of a wrapped result's schema: the schema of its `result`, if known. */
export function resultSchema(schema: Record<string, unknown> | null | undefined): Record<string, unknown> | undefined {
  const result = isPlainObject(schema) && isPlainObject(schema.properties) ? schema.properties.result : undefined;
  return isPlainObject(result) ? result : undefined;
}

/** An outputSchema that declares the wrapper: an object whose one property, `result`, is a required string. */
export function isWrapperSchema(schema: unknown): schema is { properties: { result: Record<string, unknown> } } {
  if (!isPlainObject(schema) || schema.type !== 'object' || !isPlainObject(schema.properties)) return false;
  const result = schema.properties.result;
  return (
    Object.keys(schema.properties).length === 1 &&
    isPlainObject(result) &&
    result.type === 'string' &&
    Array.isArray(schema.required) &&
    schema.required.includes('result')
  );
}

/** The wrapper's schema with `result` allowed to be the data read from the text (an object) as well as the text. */
export function widenedSchema(schema: { properties: { result: Record<string, unknown> } }): Record<string, unknown> {
  return { ...schema, properties: { ...schema.properties, result: { ...schema.properties.result, type: ['string', 'object'] } } };
}
