import { defineConfig } from 'vitest/config';

// Unit tests (`*.test.ts`) touch no network and no disk outside the OS temp dir.
// Integration tests (`*.int.test.ts`, `test/e2e/**`) run against the real Kafka, registry and Redis,
// brought up once by the global setup and handed to tests through `inject`.
const sources = ['libs/*/test/**', 'services/*/test/**', 'test/**'];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // Projects with different maxWorkers need distinct group orders; unit tests run first.
          sequence: { groupOrder: 0 },
          include: sources.map((s) => `${s}/*.test.ts`),
          exclude: ['**/*.int.test.ts', '**/node_modules/**', 'test/e2e/**'],
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: [...sources.map((s) => `${s}/*.int.test.ts`), 'test/e2e/**/*.test.ts'],
          exclude: ['**/node_modules/**'],
          globalSetup: ['test/infra/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Integration tests share one broker on a 2-core machine; a few files at a time is faster than many.
          maxWorkers: 2,
        },
      },
    ],
  },
});
