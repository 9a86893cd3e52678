import { randomUUID } from 'node:crypto';
import {
  demoEnv,
  dropDeployment,
  startPipeline,
  waitUntilReady,
  type Env,
  type Pipeline,
} from '@tidemark/cli';
import type { ScenarioSession } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { endpoints } from '@tidemark/test-infra';

// The whole pipeline for one end-to-end test file, on topics and Redis keys of its own, torn down after.

export async function e2ePipeline(
  scenarios: readonly ScenarioSession[],
  extra: Env = {},
): Promise<{ pipeline: Pipeline; env: Env; stop: () => Promise<void> }> {
  const { kafkaBrokers, schemaRegistryUrl, redisUrl } = endpoints();
  const run = randomUUID().slice(0, 8);
  const env = await demoEnv(
    {
      KAFKA_BROKERS: kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: schemaRegistryUrl,
      REDIS_URL: redisUrl,
      TOPIC_PREFIX: `e2e-${run}.`,
      REDIS_PREFIX: `e2e-${run}:`,
      LOG_LEVEL: 'warn',
      ...extra,
    },
    scenarios,
  );
  const logger = createLogger('e2e', 'warn');
  const pipeline = await startPipeline({ env, logger, port: 0 });
  await waitUntilReady(pipeline.host);
  const stop = async () => {
    await pipeline.stop();
    await dropDeployment(env);
  };
  return { pipeline, env, stop };
}
