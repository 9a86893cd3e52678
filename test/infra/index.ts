import { randomUUID } from 'node:crypto';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Redis } from 'ioredis';
import { Kafka, logLevel, type Admin, type ITopicConfig } from 'kafkajs';
import { inject, onTestFinished } from 'vitest';
import type { Endpoints } from './endpoints.js';

export type { Endpoints } from './endpoints.js';
export { LocalKafka } from './local-kafka.js';
export { LocalRedis } from './local-redis.js';
export { LocalRedisCluster } from './local-redis-cluster.js';
export { freePort } from './ports.js';
export { untilReady } from './instances.js';
export { startFaultProxy, type FaultProxy } from './fault-proxy.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

/** The endpoints the global setup acquired for this run. */
export function endpoints(): Endpoints {
  return inject('endpoints');
}

/** A name no other test (or earlier run) uses: isolate by naming, so tests run in parallel and re-run. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function kafkaClient(clientId = uniqueName('test')): Kafka {
  return new Kafka({
    clientId,
    brokers: endpoints().kafkaBrokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 100 },
  });
}

/** An admin client disconnected when the test finishes. */
export async function kafkaAdmin(kafka = kafkaClient()): Promise<Admin> {
  const admin = kafka.admin();
  await admin.connect();
  onTestFinished(() => admin.disconnect());
  return admin;
}

/**
 * Creates a uniquely named topic, waits until every partition has a leader, and deletes it when
 * the test finishes.
 */
export async function createTopic(
  prefix: string,
  options: Omit<ITopicConfig, 'topic'> = {},
): Promise<string> {
  const topic = uniqueName(prefix);
  const admin = await kafkaAdmin();
  // Not kafkajs's own wait for leaders: on a fresh broker it fails on a topic not in the metadata yet
  // (UNKNOWN_TOPIC_OR_PARTITION) instead of waiting.
  await admin.createTopics({
    waitForLeaders: false,
    topics: [{ topic, numPartitions: 1, replicationFactor: 1, ...options }],
  });
  onTestFinished(async () => {
    await admin.deleteTopics({ topics: [topic], timeout: 10_000 }).catch(() => undefined);
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    // A leader in the metadata may not serve yet (NOT_LEADER_OR_FOLLOWER): ListOffsets must answer too.
    const led = await admin
      .fetchTopicMetadata({ topics: [topic] })
      .then(({ topics }) =>
        topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)),
      )
      .then(async (known) => known && (await admin.fetchTopicOffsets(topic)).length > 0)
      .catch(() => false);
    if (led) return topic;
    if (Date.now() > deadline) throw new Error(`topic ${topic} has no leader after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A Redis connection plus a key prefix of the test's own; its keys are removed when the test finishes. */
export function redisClient(): { redis: Redis; prefix: string } {
  const redis = new Redis(endpoints().redisUrl, { lazyConnect: false, maxRetriesPerRequest: 3 });
  const prefix = `${uniqueName('t')}:`;
  onTestFinished(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });
  return { redis, prefix };
}

export function schemaRegistry(): SchemaRegistry {
  return new SchemaRegistry({ host: endpoints().schemaRegistryUrl });
}
