import { randomUUID } from 'node:crypto';
import { demoEnv, startPipeline, waitUntilReady, type Env, type Pipeline } from '@tidemark/cli';
import type { ScenarioSession } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { endpoints } from '@tidemark/test-infra';
import { Kafka, logLevel } from 'kafkajs';
import { Redis } from 'ioredis';

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
    const topics = Object.values(pipeline.bus.topics);
    await pipeline.stop();
    const admin = new Kafka({
      clientId: `e2e-cleanup-${run}`,
      brokers: kafkaBrokers,
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics, timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`e2e-${run}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  };
  return { pipeline, env, stop };
}
