// @ts-check
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'dist-all/',
      'dist-sample/',
      'coverage/',
      '.redis-fleet/',
      'bench/node_modules/',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/explicit-module-boundary-types': 'off',
      'no-console': 'off',
    },
  },
  {
    // The framework-free core must stay framework-free: docs/architecture.md §3.
    files: ['lib/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@nestjs/*', 'rxjs', 'rxjs/*'],
              message: 'lib/core is framework-free (docs/architecture.md §3).',
            },
          ],
        },
      ],
    },
  },
  {
    // The lock cycle's paths: on Node 20 an object spread followed by another property
    // ({ ...call, seat }) takes V8's slow path, ~1.2 µs against ~20 ns built field by field and
    // ~100 ns with the spread last ({ seat, ...call }, when the spread object cannot hold the
    // property). It cost the fair mode ~8 % of bench S1 at c = 64 (issue 24, bench/REPORT.md).
    files: ['lib/core/**/*.ts', 'lib/locked/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement ~ Property',
          message:
            'A property after an object spread is slow on Node 20 (~1.2 µs): build the object field by field, put the spread last, or pass the value separately.',
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
