/**
 * The transformer contract. A transformer is built once per rule at config load (options
 * validated by its zod schema); the function it returns runs per result and returns the new
 * result, or undefined for "not mine" (the input passes on unchanged).
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Era } from '../mcp/era.js';
import type { FeatureSet } from '../mcp/features.js';
import type { Budget } from './budget.js';

/** A JSON-RPC `result` object as the upstream sent it (treat as untrusted data). */
export type McpResult = Record<string, unknown>;

export interface TransformContext {
  /** The request method the result answers (`tools/call`, `resources/read`, `tools/list`, …). */
  method: string;
  /** Tool or prompt name, or resource URI, when the method has one. */
  name?: string;
  features: FeatureSet;
  /** The server variant the request was made in, when variants are offered. */
  variant?: string;
  era: Era;
  /**
   * For tools/call: the tool's outputSchema as the client is shown it (the upstream's, as the
   * rules shape tools/list for the same tags and variant); null when it shows none; undefined
   * when the tool has not been listed (then assume it may have one: MCP requires
   * structuredContent from tools that declare an outputSchema). For a wrapped text
   * (`{"result": <the text>}`), the steps are given the schema of `result`.
   */
  outputSchema?: Record<string, unknown> | null;
  /** Time left for this result: loops over its text call `budget.check()` (see budget.ts). */
  budget?: Budget;
  log: Logger;
}

export type TransformFn = (result: McpResult, ctx: TransformContext) => McpResult | undefined | Promise<McpResult | undefined>;

export interface Transformer<O = unknown> {
  /** The YAML key: `json-extract`, `markdown`, … */
  name: string;
  /** One line for `explain` and the docs. */
  description: string;
  options: z.ZodType<O>;
  /** Options that make a working instance, for a transformer whose options have no defaults (docs, generic tests). */
  example?: unknown;
  create(options: O): TransformFn;
}

/** A transformer that takes no options: its function is the same for every rule. */
export function withoutOptions(name: string, description: string, fn: TransformFn): Transformer<Record<string, never>> {
  return { name, description, options: z.object({}).strict().default({}), create: () => fn };
}

/** Helpers for the common shapes inside results. */
export interface TextBlock {
  type: 'text';
  text: string;
  annotations?: Record<string, unknown>;
  [key: string]: unknown;
}

export function isTextBlock(block: unknown): block is TextBlock {
  return (
    typeof block === 'object' && block !== null && (block as TextBlock).type === 'text' && typeof (block as TextBlock).text === 'string'
  );
}

export function contentOf(result: McpResult): unknown[] | undefined {
  return Array.isArray(result.content) ? result.content : undefined;
}
