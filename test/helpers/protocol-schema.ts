/** Validation against the 2025-11-25 protocol JSON Schema (test/spec), by definition name. */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

const ajv = new Ajv2020({ strict: false });
ajv.addSchema(JSON.parse(readFileSync(new URL('../spec/schema-2025-11-25.json', import.meta.url), 'utf8')), 'mcp');

/** True when `value` is a valid `def` (e.g. CallToolResult); otherwise the validator's message. */
export function protocolCheck(def: string, value: unknown): true | string {
  return ajv.validate(`mcp#/$defs/${def}`, value) || ajv.errorsText();
}
