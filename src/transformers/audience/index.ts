/**
 * `audience`: drops content blocks whose `annotations.audience` leaves out the negotiated
 * audience (`agent` → "assistant", `human` → "user"). Blocks without an audience stay, and a
 * result is never filtered down to nothing.
 */
import { withoutOptions, type McpResult } from '../contract.js';

export const audience = withoutOptions(
  'audience',
  'Drop content blocks annotated for the other audience (agent ↔ assistant, human ↔ user).',
  function audienceFn(result, ctx) {
    const agent = ctx.features.present.has('agent');
    const human = ctx.features.present.has('human');
    if (agent === human) return undefined;
    const role = agent ? 'assistant' : 'user';
    if (ctx.method === 'tools/call' && Array.isArray(result.content)) return filtered(result, 'content', result.content, role, false);
    if (ctx.method === 'prompts/get' && Array.isArray(result.messages)) return filtered(result, 'messages', result.messages, role, true);
    return undefined;
  },
);

/** The items meant for `role` (a message by its content), or undefined when that is all of them or none. */
function filtered(result: McpResult, key: string, items: unknown[], role: string, messages: boolean): McpResult | undefined {
  const kept = items.filter((item) => isFor(messages ? (item as { content?: unknown } | null)?.content : item, role));
  return kept.length === items.length || kept.length === 0 ? undefined : { ...result, [key]: kept };
}

/** A block without an audience is for everyone. */
function isFor(block: unknown, role: string): boolean {
  const a = (block as { annotations?: { audience?: unknown } } | null)?.annotations?.audience;
  return !Array.isArray(a) || a.includes(role);
}
