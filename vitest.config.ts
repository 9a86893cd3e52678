import { defineConfig } from 'vitest/config';

// Unit tests (`*.test.ts`) touch no network and no disk outside the OS temp dir.
// Integration tests (`*.int.test.ts`, `test/e2e/**`) run against the real Kafka, registry and Redis,
// brought up once by the global setup and handed to tests through `inject`.
const sources = ['libs/*/test/**', 'services/*/test/**', 'test/**'];
// The fault runs: each kills, freezes or floods a dependency and loads the machine (a second broker's JVM,
// four services at full rate) for a minute. Run beside other files on two cores, they starved the shared
// schema registry (its kafkasql consumer missed its poll interval and answered nothing for ~50 s), and
// whatever started a pipeline then timed out. They run last, one at a time, with nothing beside them.
const faultRuns = [
  'test/e2e/broker-faults.test.ts',
  'test/e2e/redis-loss.test.ts',
  'test/e2e/chaos.test.ts',
  'test/e2e/network-faults.test.ts',
  'test/e2e/determinism.test.ts',
  // Eight service processes (two of each) and a three-node Redis Cluster.
  'test/e2e/cluster.test.ts',
];
// The benchmark smokes that run services (or their same-shape groups) flat out for many seconds: beside
// other files they starved the registry the same way (a 63 s silence, a publisher test timing out).
// They run after the fault runs, one at a time.
const heavyBenches = [
  'services/cli/test/bench-pipeline.int.test.ts',
  'services/cli/test/bench-baseline.int.test.ts',
  'services/materializer/test/bench-service.int.test.ts',
];
const integration = {
  globalSetup: ['test/infra/global-setup.ts'],
  testTimeout: 120_000,
  hookTimeout: 180_000,
};

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
          exclude: ['**/node_modules/**', ...faultRuns, ...heavyBenches],
          ...integration,
          // Integration tests share one broker on a 2-core machine; a few files at a time is faster than many.
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'faults',
          sequence: { groupOrder: 2 },
          include: faultRuns,
          ...integration,
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: 'heavy',
          sequence: { groupOrder: 3 },
          include: heavyBenches,
          ...integration,
          maxWorkers: 1,
        },
      },
    ],
  },
});
