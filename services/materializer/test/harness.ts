// The materializer against the real stack, isolated per test: its own topic prefix, consumer groups and
// Redis prefix. Turns are published as an agent runtime would; the projection is read back and compared
// with core's fold over the same turns; dead letters are read off the deadletter topic.
import { Bus, provisionTopics, topicNames, type EventConsumer, type EventProducer } from '@tidemark/contract';
import { foldTurns, seededRandom, type BoundaryQuery, type DeadLetter, type TurnEvent } from '@tidemark/core';
import { parseConfig, Registry } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { endpoints, redisClient, uniqueName } from '@tidemark/test-infra';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { expect, onTestFinished } from 'vitest';
import {
  create as createMaterializer,
  materializerConfigSchema,
  type Materializer,
  type MaterializerConfig,
} from '../src/index.js';

export interface Harness {
  readonly config: MaterializerConfig;
  /** The environment a materializer process of this harness runs with. */
  readonly env: Record<string, string>;
  readonly bus: Bus;
  readonly producer: EventProducer;
  readonly redis: Redis;
  readonly projection: Projection;
  /** Starts an in-process materializer (stopped when the test finishes); `overrides` change its config. */
  startMaterializer(
    overrides?: Partial<MaterializerConfig>,
    deps?: { readonly metrics?: Registry; readonly logger?: Logger },
  ): Promise<Materializer>;
  publish(turns: readonly TurnEvent[]): Promise<void>;
  /** How many records turns.l0 holds (its end offsets summed). */
  l0Records(): Promise<number>;

  /** Waits until every session's watermark reaches its expected seq. */
  waitForWatermarks(expected: ReadonlyMap<string, number>, timeoutMs?: number): Promise<void>;
  /** The same, in another projection (another Redis prefix). */
  waitForWatermarksOf(
    projection: Projection,
    expected: ReadonlyMap<string, number>,
    timeoutMs?: number,
  ): Promise<void>;
  /** Waits until a group has committed every record of turns.l0. */
  waitForCommitted(groupId: string, timeoutMs?: number): Promise<void>;
  /** Dead letters read off the topic so far. */
  readonly deadLetters: DeadLetter[];
  waitForDeadLetters(count: number, timeoutMs?: number): Promise<DeadLetter[]>;
}

export async function harness(): Promise<Harness> {
  const { redis, prefix } = redisClient();
  const e = endpoints();
  const env: Record<string, string> = {
    KAFKA_BROKERS: e.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: e.schemaRegistryUrl,
    REDIS_URL: e.redisUrl,
    TOPIC_PREFIX: `${uniqueName('mat')}.`,
    REDIS_PREFIX: prefix,
    MATERIALIZER_GROUP_ID: uniqueName('materializer'),
    TOPIC_PARTITIONS: '2',
    EPOCH_CHECK_MS: '200',
    REBUILD_IDLE_MS: '1500',
    CONSUMER_SESSION_TIMEOUT_MS: '6000',
    LOG_LEVEL: process.env.MAT_LOG ?? 'silent',
  };
  const config = parseConfig(materializerConfigSchema, env);
  const topics = topicNames(config.TOPIC_PREFIX);
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: uniqueName('mat-test'),
    topics,
    service: 'test',
  });
  const admin = bus.kafka.admin();
  await admin.connect();
  await provisionTopics(admin, topics, { partitions: config.TOPIC_PARTITIONS });
  const producer = await bus.producer();
  onTestFinished(async () => {
    await bus.disconnect();
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
  });

  const deadLetters: DeadLetter[] = [];
  const reader: EventConsumer = bus.consumer({
    groupId: uniqueName('deadletter-reader'),
    role: 'deadletter',
    onBatch: (records) => {
      deadLetters.push(...records.map((r) => r.value));
      return Promise.resolve();
    },
  });
  await reader.run();

  const projection = new Projection(redis, { prefix });
  const poll = async (done: () => Promise<boolean>, timeoutMs: number, what: () => string): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const waitForWatermarksOf = async (
    target: Projection,
    expected: ReadonlyMap<string, number>,
    timeoutMs = 30_000,
  ): Promise<void> => {
    let behind: string[] = [];
    await poll(
      async () => {
        behind = [];
        for (const [key, seq] of expected) {
          const [tenantId, sessionId] = key.split('/') as [string, string];
          const { appliedSeq } = await target.watermark(tenantId, sessionId);
          if (appliedSeq < seq) behind.push(`${key} at ${appliedSeq} < ${seq}`);
        }
        return behind.length === 0;
      },
      timeoutMs,
      () => `watermarks: ${behind.slice(0, 5).join(', ')}`,
    );
  };

  return {
    config,
    env,
    bus,
    producer,
    redis,
    projection,
    async startMaterializer(overrides = {}, deps = {}) {
      const materializer = createMaterializer(
        { ...config, ...overrides },
        { metrics: new Registry(), clientId: uniqueName('materializer'), ...deps },
      );
      onTestFinished(() => materializer.stop());
      await materializer.run();
      return materializer;
    },
    async publish(turns) {
      for (let at = 0; at < turns.length; at += 500) await producer.send('turns', turns.slice(at, at + 500));
    },
    async l0Records() {
      const offsets = await admin.fetchTopicOffsets(topics.turns);
      return offsets.reduce((sum, p) => sum + Number(p.high), 0);
    },
    waitForWatermarks: (expected, timeoutMs) => waitForWatermarksOf(projection, expected, timeoutMs),
    waitForWatermarksOf,
    async waitForCommitted(groupId, timeoutMs = 30_000) {
      let state = '';
      await poll(
        async () => {
          const [ends, committed] = await Promise.all([
            admin.fetchTopicOffsets(topics.turns),
            admin.fetchOffsets({ groupId, topics: [topics.turns] }),
          ]);
          const at = new Map(
            committed.flatMap((t) => t.partitions.map((p) => [p.partition, Number(p.offset)])),
          );
          state = JSON.stringify({ ends: ends.map((p) => p.high), at: [...at] });
          return ends.every(
            (p) => Number(p.high) === Number(p.low) || (at.get(p.partition) ?? -1) >= Number(p.high),
          );
        },
        timeoutMs,
        () => `group ${groupId} to commit the topic: ${state}`,
      );
    },
    deadLetters,
    async waitForDeadLetters(count, timeoutMs = 30_000) {
      await poll(
        () => Promise.resolve(deadLetters.length >= count),
        timeoutMs,
        () => `${count} dead letters, have ${deadLetters.length}`,
      );
      return deadLetters;
    },
  };
}

/** The last seq each session's fold reaches: what its watermark must come to. */
export function expectedWatermarks(turns: readonly TurnEvent[]): Map<string, number> {
  const bySession = new Map<string, TurnEvent[]>();
  for (const turn of turns) {
    const key = `${turn.tenantId}/${turn.sessionId}`;
    bySession.set(key, [...(bySession.get(key) ?? []), turn]);
  }
  return new Map(
    [...bySession].map(([key, list]) => [
      key,
      foldTurns(list[0]!.tenantId, list[0]!.sessionId, list).fold.appliedSeq,
    ]),
  );
}

/**
 * Compares the projection with core's fold over the same turns (each session's turns in publish order),
 * at `count` random boundaries per session, with claimed ids, keys and paths looked up.
 */
export async function expectMatchesFold(
  projection: Projection,
  turns: readonly TurnEvent[],
  seed: number,
  count = 25,
): Promise<void> {
  const random = seededRandom(seed);
  const bySession = new Map<string, TurnEvent[]>();
  for (const turn of turns) {
    const key = `${turn.tenantId}/${turn.sessionId}`;
    bySession.set(key, [...(bySession.get(key) ?? []), turn]);
  }
  for (const list of bySession.values()) {
    const { fold } = foldTurns(list[0]!.tenantId, list[0]!.sessionId, list);
    const ids = new Set<string>(['never-opened']);
    const keys = new Set<string>(['approach:never-tried']);
    const paths = new Set<string>(['never/written.ts']);
    for (const turn of list) {
      for (const change of turn.changes) {
        if (change.type === 'item_opened' || change.type === 'item_closed') ids.add(change.itemId);
        if (change.type === 'item_disposed') keys.add(change.itemKey);
        if (change.type === 'artifact_recorded') paths.add(change.path);
      }
    }
    const some = (set: Set<string>): string[] => [...set].filter(() => random() < 0.3);
    const last = Math.max(1, fold.appliedSeq);
    for (let i = 0; i < count; i++) {
      const toSeq = 1 + Math.floor(random() * last);
      const query: BoundaryQuery = {
        tenantId: fold.tenantId,
        sessionId: fold.sessionId,
        fromSeq: 1 + Math.floor(random() * toSeq),
        toSeq,
        itemIds: some(ids),
        itemKeys: some(keys),
        paths: some(paths),
      };
      expect(await projection.stateAt(query)).toEqual(fold.stateAt(query));
    }
    const watermark = await projection.watermark(fold.tenantId, fold.sessionId);
    expect(watermark.appliedSeq).toBe(fold.appliedSeq);
  }
}

/**
 * Every projection key under a prefix with its content, the prefix stripped, the epoch and rebuild mark
 * left out: two runs over the same L0 must give equal dumps.
 */
export async function dumpProjection(redis: Redis, prefix: string): Promise<Record<string, unknown>> {
  const keys = (await redis.keys(`${prefix}proj:{*`)).sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await redis.type(key);
    out[key.slice(prefix.length)] =
      type === 'hash'
        ? await redis.hgetall(key)
        : type === 'zset'
          ? await redis.zrange(key, 0, -1, 'WITHSCORES')
          : await redis.get(key);
  }
  return out;
}
