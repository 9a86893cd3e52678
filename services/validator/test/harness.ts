// The validator against the real stack, isolated per test: its own topic prefix, consumer groups and
// Redis prefix. Turns go into the projection through Projection.applyBatch (the materializer's own
// write path); compactions are published as the compactor would; markers are read back off the topic.
import {
  canonicalJson,
  type Claims,
  type Compaction,
  type MarkerDecision,
  type MarkerRevocation,
  type Policy,
  type StateChange,
  type TurnEvent,
  type TurnRole,
} from '@tidemark/core';
import { Bus, provisionTopics, topicNames, type EventProducer } from '@tidemark/contract';
import { Projection } from '@tidemark/state';
import { createLogger, parseConfig, Registry } from '@tidemark/service';
import { endpoints, redisClient, uniqueName } from '@tidemark/test-infra';
import { strictL1Node } from '@tidemark/core/testing';
import { onTestFinished } from 'vitest';
import { create as createValidator, type Validator, type ValidatorDeps } from '../src/index.js';
import { validatorConfigSchema, type ValidatorConfig } from '../src/config.js';

export interface Harness {
  readonly config: ValidatorConfig;
  readonly bus: Bus;
  readonly producer: EventProducer;
  readonly projection: Projection;
  readonly redis: ReturnType<typeof redisClient>['redis'];
  readonly prefix: string;
  /** Starts a validator of this harness (stopped when the test finishes). */
  startValidator(deps?: ValidatorDeps): Promise<Validator>;
  /** Applies turns to the projection at turns.l0 partition 0, offset seq - 1 (the reference's default). */
  apply(turns: readonly TurnEvent[]): Promise<void>;
  publish(compactions: readonly Compaction[]): Promise<void>;
  /** Publishes operators' revocations, as the resume service's revoke endpoint does. */
  revoke(revocations: readonly MarkerRevocation[]): Promise<void>;
  /** Every decision read off the markers topic so far, in log order (per partition). */
  readonly markers: MarkerDecision[];
  /** Waits until `count` decisions were read (or fails after `timeoutMs`). */
  waitForMarkers(count: number, timeoutMs?: number): Promise<MarkerDecision[]>;
  /** Waits until the validator committed every compaction published so far, and the reader caught up. */
  settled(timeoutMs?: number): Promise<void>;
  /** The decisions of one session, in log order. */
  markersOf(sessionId: string): MarkerDecision[];
}

export async function harness(env: Record<string, string> = {}): Promise<Harness> {
  const { redis, prefix } = redisClient();
  const e = endpoints();
  const config = parseConfig(validatorConfigSchema, {
    KAFKA_BROKERS: e.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: e.schemaRegistryUrl,
    REDIS_URL: e.redisUrl,
    TOPIC_PREFIX: `${uniqueName('val')}.`,
    REDIS_PREFIX: prefix,
    VALIDATOR_GROUP_ID: uniqueName('validator'),
    TOPIC_PARTITIONS: '2',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const topics = topicNames(config.TOPIC_PREFIX);
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: uniqueName('validator-test'),
    topics,
    service: 'validator-test',
  });
  const admin = bus.kafka.admin();
  await admin.connect();
  await provisionTopics(admin, topics, { partitions: config.TOPIC_PARTITIONS });
  onTestFinished(async () => {
    await admin
      .deleteTopics({ topics: Object.values(topics), timeout: 10_000 })
      .catch(() => undefined)
      .finally(() => admin.disconnect());
  });
  const producer = await bus.producer();
  const projection = new Projection(redis, { prefix });

  const markers: MarkerDecision[] = [];
  const readerGroup = uniqueName('markers-reader');
  const reader = bus.consumer({
    groupId: readerGroup,
    role: 'markers',
    onBatch: async (records) => {
      for (const record of records) markers.push(record.value);
      await Promise.resolve();
    },
  });
  await reader.run();
  // One teardown for every consumer of the test, in parallel: a kafkajs consumer takes up to its fetch
  // wait (5 s) to leave, and one after the other that adds up.
  const validators: Validator[] = [];
  onTestFinished(async () => {
    await Promise.all([...validators.map((v) => v.stop()), bus.disconnect()]);
  });

  return {
    config,
    bus,
    producer,
    projection,
    redis,
    prefix,
    markers,
    async startValidator(deps = {}) {
      const validator = createValidator(config, {
        logger: createLogger('validator', 'silent'),
        metrics: new Registry(),
        clientId: uniqueName('validator'),
        ...deps,
      });
      validators.push(validator);
      await validator.run();
      return validator;
    },
    async apply(turns) {
      await projection.applyBatch(turns.map((turn) => ({ turn, partition: 0, offset: turn.seq - 1 })));
    },
    async publish(compactions) {
      await producer.send('compactions', compactions);
    },
    async revoke(revocations) {
      await producer.send('revocations', revocations);
    },
    async waitForMarkers(count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (markers.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`waited ${timeoutMs} ms for ${count} decisions, got ${markers.length}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return [...markers];
    },
    async settled(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      const behind = async (topic: string, groupId: string) => {
        const [ends, committed] = await Promise.all([
          admin.fetchTopicOffsets(topic),
          admin.fetchOffsets({ groupId, topics: [topic] }),
        ]);
        const at = new Map(
          committed.flatMap((t) => t.partitions.map((p) => [p.partition, Number(p.offset)])),
        );
        return ends.some((p) => Number(p.high) > Math.max(0, at.get(p.partition) ?? 0));
      };
      while (
        (await behind(topics.compactions, config.VALIDATOR_GROUP_ID)) ||
        (await behind(topics.revocations, `${config.VALIDATOR_GROUP_ID}-revocations`)) ||
        (await behind(topics.markers, readerGroup))
      ) {
        if (Date.now() > deadline) throw new Error(`not settled within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    markersOf(sessionId) {
      return markers.filter((m) => m.sessionId === sessionId);
    },
  };
}

/** Decisions as canonical JSON lines, to compare byte for byte with a useful diff. */
export function lines(decisions: readonly MarkerDecision[]): string[] {
  return decisions.map((d) => canonicalJson(d));
}

// --- Hand-written sessions (the specification's cases) --------------------------------------------

export function turnOf(
  tenantId: string,
  sessionId: string,
): (seq: number, role: TurnRole, content: string, changes?: StateChange[]) => TurnEvent {
  return (seq, role, content, changes = []) => ({
    tenantId,
    sessionId,
    seq,
    turnId: `turn-${seq}`,
    timestamp: 1_767_225_600_000 + seq * 1000,
    role,
    content,
    tokenCount: Math.ceil(content.length / 4),
    changes,
    original: null,
  });
}

export function filler(turn: ReturnType<typeof turnOf>, from: number, to: number): TurnEvent[] {
  const turns: TurnEvent[] = [];
  for (let seq = from; seq <= to; seq++) {
    turns.push(turn(seq, seq % 2 === 0 ? 'assistant' : 'tool', `working on step ${seq}`));
  }
  return turns;
}

/** The specification's migration agent: a rejected approach, a rollback script, 80 turns. */
export function migrationSession(tenantId: string, sessionId: string, length = 80): TurnEvent[] {
  const turn = turnOf(tenantId, sessionId);
  return [
    turn(1, 'user', 'Migrate the users table. The schema migration must be reversible.', [
      {
        type: 'item_opened',
        itemId: 'constraint:reversible',
        kind: 'constraint',
        name: 'reversible migration',
        detail: 'the schema migration be reversible',
        handle: null,
        logPath: null,
      },
    ]),
    ...filler(turn, 2, 9),
    turn(10, 'assistant', 'Plan: add the column, then backfill. Running a dry run.', [
      {
        type: 'item_opened',
        itemId: 'call:dry-run',
        kind: 'tool_call',
        name: 'run_migration',
        detail: '--dry-run',
        handle: null,
        logPath: null,
      },
    ]),
    turn(11, 'tool', 'Dry run failed: the backfill holds a table lock past the timeout.', [
      { type: 'item_closed', itemId: 'call:dry-run', outcome: 'error', detail: null },
    ]),
    turn(12, 'user', 'No. Do not add the column and then backfill; find another way.', [
      {
        type: 'item_disposed',
        itemKey: 'approach:add-column-backfill',
        disposition: 'rejected',
        reason: 'failed dry run (table lock); the user rejected it',
        supersededBy: null,
      },
    ]),
    ...filler(turn, 13, 29),
    turn(30, 'assistant', 'Wrote the rollback script.', [
      {
        type: 'artifact_recorded',
        path: 'migrations/003_down.sql',
        action: 'created',
        digest: 'sha256:9f2c',
      },
    ]),
    ...filler(turn, 31, length),
  ];
}

/** A session with a tool call opened at turn 5 and still running at turn 40. */
export function openCallSession(tenantId: string, sessionId: string): TurnEvent[] {
  const turn = turnOf(tenantId, sessionId);
  return [
    ...filler(turn, 1, 4),
    turn(5, 'assistant', 'Starting the full test suite; it takes a while.', [
      {
        type: 'item_opened',
        itemId: 'call:test-suite',
        kind: 'tool_call',
        name: 'run_tests',
        detail: '--all',
        handle: null,
        logPath: null,
      },
    ]),
    ...filler(turn, 6, 40),
  ];
}

/** An L1 node over fromSeq..toSeq, summarised strictly, its claims optionally edited (a lossy summarizer). */
export function l1Node(
  turns: readonly TurnEvent[],
  fromSeq: number,
  toSeq: number,
  policy: Policy,
  edit: (claims: Claims) => Partial<Claims> = () => ({}),
): Compaction {
  return strictL1Node({ turns, fromSeq, toSeq, policy, edit, summarizer: 'test' });
}
