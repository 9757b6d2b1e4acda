// ESLint flat config: @eslint/js recommended + typescript-eslint recommended
// (syntax only: no type information, so linting needs no tsconfig) over the
// whole repository.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

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
);
