import { Bus, provisionTopics, topicNames, type TopicNames } from '@tidemark/contract';
import { canonicalJson, type Compaction, type TurnEvent } from '@tidemark/core';
import { Projection } from '@tidemark/state';
import { endpoints, kafkaAdmin, redisClient, uniqueName } from '@tidemark/test-infra';
import type { Redis } from 'ioredis';
import { onTestFinished } from 'vitest';
import { compactorConfigSchema, type CompactorConfig } from '../src/config.js';

// What every compactor integration test needs: its own topics (one partition, so an L0 offset is the
// order turns were sent in), its own Redis prefix, a projection filled the way the materializer fills
// it, and a collector of what lands on the compactions topic.

export interface Stage {
  readonly topicPrefix: string;
  readonly topics: TopicNames;
  readonly redis: Redis;
  readonly redisPrefix: string;
  readonly projection: Projection;
  readonly bus: Bus;
  /** turns.l0 offset of each session's seq, in the order sent. */
  readonly offsets: Map<string, Map<number, number>>;
  /** Publishes turns to turns.l0 and applies them to the projection (the materializer's job). */
  publish(turns: readonly TurnEvent[], options?: { readonly apply?: boolean }): Promise<void>;
  config(overrides?: Record<string, string>): CompactorConfig;
  env(overrides?: Record<string, string>): Record<string, string>;
}

export async function stage(): Promise<Stage> {
  const topicPrefix = `${uniqueName('cmp')}.`;
  const topics = topicNames(topicPrefix);
  const admin = await kafkaAdmin();
  await provisionTopics(admin, topics, { partitions: 1 });
  onTestFinished(async () => {
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
  });
  const { redis, prefix: redisPrefix } = redisClient();
  const projection = new Projection(redis, { prefix: redisPrefix });
  const { kafkaBrokers, schemaRegistryUrl, redisUrl } = endpoints();
  const bus = await Bus.connect({
    brokers: kafkaBrokers,
    registryUrl: schemaRegistryUrl,
    clientId: uniqueName('cmp-test'),
    topics,
    service: 'compactor-test',
  });
  onTestFinished(() => bus.disconnect());
  const producer = await bus.producer();
  const offsets = new Map<string, Map<number, number>>();
  let next = 0;
  const env = (overrides: Record<string, string> = {}): Record<string, string> => ({
    KAFKA_BROKERS: kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: schemaRegistryUrl,
    REDIS_URL: redisUrl,
    TOPIC_PREFIX: topicPrefix,
    REDIS_PREFIX: redisPrefix,
    GROUP_ID: uniqueName('compactor'),
    PARTITIONS: '1',
    LOG_LEVEL: 'warn',
    ...overrides,
  });
  return {
    topicPrefix,
    topics,
    redis,
    redisPrefix,
    projection,
    bus,
    offsets,
    env,
    config: (overrides) => compactorConfigSchema.parse(env(overrides)),
    async publish(turns, options = {}) {
      await producer.send('turns', turns);
      const positioned = turns.map((turn) => {
        const key = `${turn.tenantId}/${turn.sessionId}`;
        const seqs = offsets.get(key) ?? new Map<number, number>();
        offsets.set(key, seqs);
        const offset = next++;
        if (!seqs.has(turn.seq)) seqs.set(turn.seq, offset);
        return { turn, partition: 0, offset };
      });
      if (options.apply ?? true) await projection.applyBatch(positioned);
    },
  };
}

/** Everything published on the compactions topic, read by a group of the test's own. */
export async function collectCompactions(bus: Bus): Promise<{
  readonly all: Compaction[];
  waitFor(predicate: (all: readonly Compaction[]) => boolean, timeoutMs?: number): Promise<void>;
}> {
  const all: Compaction[] = [];
  const consumer = bus.consumer({
    groupId: uniqueName('collect'),
    role: 'compactions',
    onBatch: (records) => {
      all.push(...records.map((r) => r.value));
      return Promise.resolve();
    },
  });
  await consumer.run();
  onTestFinished(() => consumer.stop());
  return {
    all,
    async waitFor(predicate, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(all)) {
        if (Date.now() > deadline) throw new Error(`timed out with ${all.length} compactions collected`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/** The distinct compactions by id; fails when two copies of one id differ in a single byte. */
export function distinct(compactions: readonly Compaction[]): Map<string, Compaction> {
  const byId = new Map<string, Compaction>();
  for (const c of compactions) {
    const held = byId.get(c.compactionId);
    if (held !== undefined && canonicalJson(held) !== canonicalJson(c)) {
      throw new Error(`compaction ${c.compactionId} was published twice with different bytes`);
    }
    byId.set(c.compactionId, c);
  }
  return byId;
}

export const hasIds = (ids: Iterable<string>) => {
  const wanted = [...ids];
  return (all: readonly Compaction[]): boolean => {
    const seen = new Set(all.map((c) => c.compactionId));
    return wanted.every((id) => seen.has(id));
  };
};
