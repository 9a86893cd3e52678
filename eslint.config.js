// One linter for the whole tree: type-checked TypeScript rules, Prettier owns formatting.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// Modules that perform I/O. The core library must stay pure: it is reasoned about and tested
// exhaustively without infrastructure.
const ioModules = [
  'kafkajs',
  'ioredis',
  'avsc',
  '@kafkajs/confluent-schema-registry',
  'fastify',
  'pino',
  'node:fs',
  'node:fs/promises',
  'node:net',
  'node:http',
  'node:https',
  'node:child_process',
  'node:dgram',
  'fs',
  'net',
  'http',
  'https',
  'child_process',
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/.local/**', '**/dist/**', '**/*.generated.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@tidemark/*/src/*', '@tidemark/*/test/*', '../../libs/*', '../../services/*'],
              message: 'Import another package through its public face (its index), not its internals.',
            },
          ],
        },
      ],
    },
  },
  {
    // No module imports itself back through others: each concept has one place, and the graph reads
    // from the leaves (core) up to the services.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: { 'import-x/no-cycle': 'error' },
  },
  {
    // A package's test helpers (`@tidemark/<pkg>/testing`) are for tests, never for what ships.
    files: ['libs/*/src/**/*.ts', 'services/*/src/**/*.ts'],
    ignores: ['libs/*/src/testing.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@tidemark/*/src/*', '@tidemark/*/test/*', '../../libs/*', '../../services/*'],
              message: 'Import another package through its public face (its index), not its internals.',
            },
            { group: ['@tidemark/*/testing'], message: 'Test helpers are for tests, not for shipped code.' },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.map((name) => ({ name, message: 'libs/core is pure: no I/O imports.' })),
          patterns: [{ group: ['@tidemark/*'], message: 'libs/core depends on no other Tidemark package.' }],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  prettier,
);
