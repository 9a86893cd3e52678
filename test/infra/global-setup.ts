import type { TestProject } from 'vitest/node';
import { acquireEndpoints, type Endpoints } from './endpoints.js';

declare module 'vitest' {
  export interface ProvidedContext {
    endpoints: Endpoints;
  }
}

/** Brings the real infrastructure up once per integration run and hands its addresses to every test. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { endpoints, stop } = await acquireEndpoints();
  console.log(
    `integration tests use ${endpoints.source}: kafka ${endpoints.kafkaBrokers.join(',')}, ` +
      `registry ${endpoints.schemaRegistryUrl}, redis ${endpoints.redisUrl}`,
  );
  project.provide('endpoints', endpoints);
  return stop;
}
