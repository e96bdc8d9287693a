/** The built-in transformers by YAML name; plugins add theirs at config load. */
import { audience } from './audience/index.js';
import { jsonExtract } from './json-extract/index.js';
import { markdown } from './markdown/index.js';
import { patternExtract } from './pattern-extract/index.js';
import { plainText } from './plain-text/index.js';
import { tabular } from './tabular/index.js';
import { trim } from './trim/index.js';
import type { Transformer } from './contract.js';

export function builtinTransformers(): Map<string, Transformer> {
  return new Map([jsonExtract, patternExtract, markdown, plainText, trim, tabular, audience].map((t) => [t.name, t as Transformer]));
}
