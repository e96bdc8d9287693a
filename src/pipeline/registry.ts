/** The built-in transformers by YAML name; plugins add theirs at config load. */
import { audience } from '../transformers/audience/index.js';
import { jsonExtract } from '../transformers/json-extract/index.js';
import { markdown } from '../transformers/markdown/index.js';
import { patternExtract } from '../transformers/pattern-extract/index.js';
import { plainText } from '../transformers/plain-text/index.js';
import { tabular } from '../transformers/tabular/index.js';
import { trim } from '../transformers/trim/index.js';
import type { Transformer } from './types.js';

export function builtinTransformers(): Map<string, Transformer<any>> {
  return new Map([jsonExtract, patternExtract, markdown, plainText, trim, tabular, audience].map((t) => [t.name, t as Transformer<any>]));
}
