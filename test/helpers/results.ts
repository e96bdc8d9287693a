/** Generators of what transformers meet, shared by the property tests and the fuzzing. */
import fc from 'fast-check';

/** Text that looks like what servers write: prose, markdown, JSON, tables, key: value lines. */
export const serverText = fc.oneof(
  fc.string(),
  fc.json(),
  fc.constantFrom(
    '# Title\n\nSome **bold** prose.\n\n## Examples\n\n- a: 1\n- b: two',
    '| A | B |\n|---|---|\n| 1 | x |',
    'Temperature: 8\nHumidity: 72',
    '```json\n{"a": [1, 2]}\n```',
    'see {"k": "v"} here',
  ),
  fc
    .array(fc.constantFrom('# H', '## Tips', '- item', 'key: value', '| a |', '|---|', 'text.', '**x**', '\n', '`code`', '[l](http://x)'), {
      maxLength: 12,
    })
    .map((parts) => parts.join('\n')),
);

/** Feature sets that make each built-in rule act. */
export const FEATURE_SETS = [
  ['agent', 'format=json'],
  ['human', 'format=markdown'],
  ['format=text'],
  ['verbosity=compact'],
  ['agent'],
  ['human'],
];
