/** Validates data against a tool's declared outputSchema; schemas are compiled once each. */
import { Ajv, type ValidateFunction } from 'ajv';

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false });
const compiled = new WeakMap<object, ValidateFunction | null>();

/** True when there is no schema, or the data satisfies it; an uncompilable schema fails closed. */
export function satisfiesSchema(data: unknown, schema: Record<string, unknown> | undefined): boolean {
  if (!schema) return true;
  let validate = compiled.get(schema);
  if (validate === undefined) {
    try {
      validate = ajv.compile(schema);
    } catch {
      validate = null;
    }
    compiled.set(schema, validate);
  }
  return validate !== null && validate(data) === true;
}
