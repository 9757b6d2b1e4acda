// ESLint flat config: @eslint/js recommended + typescript-eslint recommended
// over the whole repository, two typed rules on promises over every file a
// tsconfig compiles, and the layering rules: product code never imports tests,
// and each folder reaches another only through its public contract (the
// helper's protocol/, the app's api/contract.ts).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// Import specifiers are matched as written (relative paths), by regular expression,
// in static imports (no-restricted-imports) and dynamic import() alike
// (no-restricted-syntax): a lazy import is still an edge of the graph.
const TESTS = {
  regex: '(^|/)(test|e2e|bench)/',
  message: 'product code never imports tests, end-to-end specs or benchmarks',
};
const HELPER_INTERNALS = {
  regex: '(^|/)privileged-helper/src/(?!protocol/)',
  message: 'outside the helper, use only its contract: privileged-helper/src/protocol/ (move what both sides need there)',
};
const layering = {
  common: [],
  helper: [{ regex: '(^|/)(main|renderer|electron)/', message: 'the helper is the bottom layer: it imports nothing of its clients' }],
  controller: [HELPER_INTERNALS, { regex: '(^|/)renderer/', message: 'the controller does not import the renderer' }],
  renderer: [
    HELPER_INTERNALS,
    { regex: '(^|/)main/(?!src/api/)', message: 'the renderer talks to the controller only through main/src/api/ (its contract, free of Node)' },
    { regex: '^node:', message: 'the renderer runs in a sandboxed page without Node' },
  ],
};

/**
 * The rules that keep one layer's imports to `patterns`. A dynamic import
 * must name its module literally, or lint could not check where it goes.
 * The selector's regular expression cannot contain a slash (esquery ends it
 * there), so slashes are written as \x2F.
 */
function restricted(patterns) {
  const dynamic = patterns.map(({ regex, message }) => ({
    selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\x2F')}/]`,
    message,
  }));
  return {
    'no-restricted-imports': ['error', { patterns }],
    'no-restricted-syntax': [
      'error',
      ...dynamic,
      { selector: "ImportExpression[source.type!='Literal']", message: 'name the module of a dynamic import literally, so lint can check the layering' },
    ],
  };
}

export default defineConfig(
  {
    ignores: ['**/node_modules/**', '**/dist/**', '**/test-results/**', '**/coverage/**', 'build/stub-*'],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      // `_`-prefixed bindings are deliberately unused (placeholders, rest-omit).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Rethrowing with `{ cause: err }` is wanted, but wrapping errors into a
      // friendlier message is common here; keep it visible without failing.
      'preserve-caught-error': 'error',
    },
  },
  {
    // Typed rules: a promise nobody awaits, or one handed to a caller that
    // expects a void callback (an event emitter, a React prop), rejects where
    // no one handles it, which hides the failure or ends the helper daemon.
    // `void p` marks one left to run on its own: p handles its own failure.
    // Each file is checked with the tsconfig of its folder, so these cover
    // exactly what `npm run typecheck` compiles.
    files: ['privileged-helper/{src,test,bench}/**/*.ts', 'main/{src,test}/**/*.ts', 'renderer/{src,test}/**/*.{ts,tsx}', 'electron/*.cts', 'e2e/**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    files: ['privileged-helper/src/**', 'main/src/**', 'renderer/src/**', 'electron/**'],
    rules: restricted([TESTS, ...layering.common]),
  },
  {
    files: ['privileged-helper/src/**'],
    rules: restricted([TESTS, ...layering.helper]),
  },
  {
    files: ['main/src/**', 'electron/**'],
    rules: restricted([TESTS, ...layering.controller]),
  },
  {
    files: ['renderer/src/**'],
    rules: restricted([TESTS, ...layering.renderer]),
  },
);
