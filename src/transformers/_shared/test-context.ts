/** A TransformContext for unit tests. */
import pino from 'pino';
import { parseFeatures } from '../../mcp/features.js';
import type { TransformContext } from '../contract.js';

export function testContext(method: string, tags: string[] = [], extra: Partial<TransformContext> = {}): TransformContext {
  return { method, name: 'tool', features: parseFeatures(tags).features, era: 'legacy', log: pino({ level: 'silent' }), ...extra };
}
