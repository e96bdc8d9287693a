// Lint for src/, test/ and bench/: typescript-eslint's type-checked rules, the promise rules the
// house style names, and one rule that keeps media types parsed in one place (src/mcp/media-type.ts).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** A substring test on a header value passes `application/json-seq` or a parameter: parse the media type instead. */
const MEDIA_TYPE_SUBSTRING = {
  selector:
    'CallExpression[callee.property.name=/^(includes|indexOf|startsWith|endsWith)$/][arguments.0.value=/^(application\\/json|text\\/event-stream)$/]',
  message:
    'Read a Content-Type with mediaTypeOf() and an Accept header with acceptedTypes() (src/mcp/media-type.ts) instead of matching a substring.',
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.venv/', '.bench/', 'coverage/', 'test/fixtures/.built/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      // One program for the whole tree (tsconfig.json): a third faster than a project service per file.
      parserOptions: { project: ['./tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-restricted-syntax': ['error', MEDIA_TYPE_SUBSTRING],
      // `_`-named bindings are the way a rest pattern leaves members out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // An abort signal's reason is whatever the aborter gave; it is passed on as it is.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // A `let` that a callback defined earlier reads stays `let`: as a const it would throw if the callback ran first.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // JSON.parse and JSON-RPC payloads are `any` in TypeScript's own typings; the message parsers check them at runtime.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // Async methods implement Promise-returning interfaces (filters, upstream calls) without always awaiting.
      '@typescript-eslint/require-await': 'off',
      // String(value ?? '') of a wire value is deliberate: an unexpected object shows as text rather than failing.
      '@typescript-eslint/no-base-to-string': 'off',
      // JSON-RPC error codes arrive as numbers and are compared with the SDK's ErrorCode enum.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // Options objects carry callbacks in method syntax; none of them uses `this`, and destructuring them is how they are read.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // Tests read JSON answers by shape and print what they got in failure messages.
    files: ['test/**/*.ts', 'src/**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
  {
    // Plain JavaScript, and the tool configs outside tsconfig.json: linted without types.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs', '*.config.ts'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
