import {
  buildResumeContext,
  resumePlan,
  runReference,
  type Compaction,
  type MarkerDecision,
  type Policy,
  type ReferenceRun,
  type TurnEvent,
} from '@tidemark/core';
import { Bus, provisionTopics, topicNames, type EventProducer, type TopicNames } from '@tidemark/contract';
import { createServiceHost, parseConfig, Registry, type ServiceHost } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { endpoints, kafkaAdmin, redisClient, uniqueName } from '@tidemark/test-infra';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { expect, onTestFinished, vi } from 'vitest';
import { hashToken } from '../src/auth.js';
import { resumeConfigSchema, type ResumeConfig } from '../src/config.js';
import { create as createResume, type ResumeService } from '../src/service.js';

// One isolated world per test: its own topic prefix, group ids and Redis prefix. The pipeline's other
// services are not run: the test materializes turns.l0 into the projection itself (the Projection
// library, as the materializer does), runs core's reference over the real turns.l0 positions, and
// publishes the reference's compactions and decisions, exactly as the compactor and validator would.

export const tokens = { a: 'token-of-tenant-a', b: 'token-of-tenant-b' } as const;

export interface World {
  readonly topics: TopicNames;
  readonly config: ResumeConfig;
  readonly redis: Redis;
  readonly prefix: string;
  readonly bus: Bus;
  readonly producer: EventProducer;
  readonly projection: Projection;
  /** Publishes turns and materializes them; returns where each seq of the first turn's session lives. */
  publishTurns(turns: readonly TurnEvent[]): Promise<Map<number, { partition: number; offset: number }>>;
  /** Where each seq of a session published so far lives. */
  positionsOf(turn: TurnEvent): Map<number, { partition: number; offset: number }>;
  publishCompactions(nodes: readonly Compaction[]): Promise<void>;
  publishDecisions(decisions: readonly MarkerDecision[]): Promise<void>;
  /** A resume service instance (worker + HTTP) on its own host, stopped when the test ends. */
  startService(options?: {
    worker?: boolean;
    config?: Partial<ResumeConfig>;
  }): Promise<{ service: ResumeService; host: ServiceHost; url: string }>;
}

export async function createWorld(): Promise<World> {
  const topicPrefix = `${uniqueName('resume')}.`;
  const topics = topicNames(topicPrefix);
  const admin = await kafkaAdmin();
  // One partition: every session of a world shares it, so raw reads skip other sessions' records.
  await provisionTopics(admin, topics, { partitions: 1 });
  onTestFinished(async () => {
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
  });
  const { redis, prefix } = redisClient();
  const { kafkaBrokers, schemaRegistryUrl, redisUrl } = endpoints();
  const config = parseConfig(resumeConfigSchema, {
    KAFKA_BROKERS: kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: schemaRegistryUrl,
    REDIS_URL: redisUrl,
    TOPIC_PREFIX: topicPrefix,
    REDIS_PREFIX: prefix,
    RESUME_GROUP_ID: uniqueName('tidemark-resume'),
    RESUME_TOKENS: `tenant-a:${hashToken(tokens.a)},tenant-b:${hashToken(tokens.b)}`,
    LOG_LEVEL: 'silent',
  });
  const logger = pino({ level: 'silent' });
  const bus = await Bus.connect({
    brokers: kafkaBrokers,
    registryUrl: schemaRegistryUrl,
    clientId: uniqueName('resume-test'),
    topics,
    service: 'resume-test',
    logger,
  });
  onTestFinished(() => bus.disconnect());
  const producer = await bus.producer();
  const projection = new Projection(redis, { prefix });

  const positions = new Map<string, Map<number, { partition: number; offset: number }>>();
  const materializer = bus.consumer({
    groupId: uniqueName('materialize'),
    role: 'turns',
    onBatch: async (records) => {
      // Positions first: a test waiting on the watermark reads them as soon as the batch is applied.
      for (const r of records) {
        const key = `${r.value.tenantId}/${r.value.sessionId}`;
        const map = positions.get(key) ?? new Map<number, { partition: number; offset: number }>();
        map.set(r.value.seq, { partition: r.raw.partition, offset: r.raw.offset });
        positions.set(key, map);
      }
      await projection.applyBatch(
        records.map((r) => ({ turn: r.value, partition: r.raw.partition, offset: r.raw.offset })),
      );
    },
  });
  await materializer.run();
  onTestFinished(() => materializer.stop());
  const positionsOf = (turn: TurnEvent) => positions.get(`${turn.tenantId}/${turn.sessionId}`)!;

  return {
    topics,
    config,
    redis,
    prefix,
    bus,
    producer,
    projection,
    async publishTurns(turns) {
      await producer.send('turns', turns);
      const last = new Map(turns.map((t) => [`${t.tenantId}/${t.sessionId}`, t]));
      await vi.waitFor(
        async () => {
          for (const turn of last.values()) {
            const { appliedSeq } = await projection.watermark(turn.tenantId, turn.sessionId);
            expect(appliedSeq).toBe(turn.seq);
          }
        },
        { timeout: 30_000, interval: 50 },
      );
      return positionsOf(turns[0]!);
    },
    positionsOf,
    async publishCompactions(nodes) {
      await producer.send('compactions', nodes);
    },
    async publishDecisions(decisions) {
      await producer.send('markers', decisions);
    },
    async startService(options = {}) {
      const host = createServiceHost({
        name: 'resume',
        port: 0,
        logger,
        register: new Registry(),
        processMetrics: false,
      });
      const service = createResume(
        { ...config, RESUME_WORKER: options.worker ?? true, ...options.config },
        { host },
      );
      host.onShutdown(() => service.stop());
      await service.run();
      const { url } = await host.listen();
      onTestFinished(() => host.close());
      return { service, host, url };
    },
  };
}

/** Publishes a session's turns and runs core's reference over their real turns.l0 positions. */
export async function sessionInWorld(
  world: World,
  turns: readonly TurnEvent[],
  policy: Policy,
  options: { maxRepairs?: number; interleave?: readonly TurnEvent[] } = {},
): Promise<{ run: ReferenceRun; positions: Map<number, { partition: number; offset: number }> }> {
  // Another session's turns in between, when given: the session's offsets are then not contiguous.
  const other = options.interleave ?? [];
  const mixed = turns.flatMap((turn, i) => (other[i] === undefined ? [turn] : [other[i], turn]));
  await world.publishTurns([...mixed, ...other.slice(turns.length)]);
  const positions = world.positionsOf(turns[0]!);
  const partition = positions.get(1)!.partition;
  const run = runReference(turns, {
    policy,
    l0Partition: partition,
    offsetOf: (seq) => positions.get(seq)!.offset,
    ...(options.maxRepairs === undefined ? {} : { maxRepairs: options.maxRepairs }),
  });
  return { run, positions };
}

/** The context core builds for the reference's final plan: what the service must serve. */
export function expectedContext(run: ReferenceRun, turns: readonly TurnEvent[], l0Partition: number) {
  const { tenantId, sessionId } = turns[0]!;
  const plan = resumePlan(run.state, { tenantId, sessionId, l0Partition });
  const nodeId = plan.mode === 'digest' ? plan.marker.compactionId : plan.checkpoint.compactionId;
  const node = nodeId === null ? null : run.compactions.find((c) => c.compactionId === nodeId)!;
  return buildResumeContext({ plan, node, turns: turns.filter((t) => t.seq >= plan.rawFromSeq) });
}

export async function getResume(
  url: string,
  tenantId: string,
  sessionId: string,
  token: string | null = tokens.a,
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const response = await fetch(
    `${url}/v1/sessions/${encodeURIComponent(tenantId)}/${encodeURIComponent(sessionId)}/resume`,
    {
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
    },
  );
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown>, text };
}

export async function getStatus(
  url: string,
  tenantId: string,
  sessionId: string,
  token: string | null = tokens.a,
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const response = await fetch(
    `${url}/v1/sessions/${encodeURIComponent(tenantId)}/${encodeURIComponent(sessionId)}/status`,
    { headers: token === null ? {} : { authorization: `Bearer ${token}` } },
  );
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown>, text };
}

/** Polls the API until the resume answers 200 with the given node (the worker caught up). */
export async function waitForResume(
  url: string,
  tenantId: string,
  sessionId: string,
  check: (body: Record<string, unknown>) => boolean,
  token: string = tokens.a,
): Promise<Record<string, unknown>> {
  let last: unknown = null;
  return vi.waitFor(
    async () => {
      const { status, body } = await getResume(url, tenantId, sessionId, token);
      last = body;
      if (status !== 200 || !check(body))
        throw new Error(`not yet: ${status} ${JSON.stringify(last).slice(0, 300)}`);
      return body;
    },
    { timeout: 30_000, interval: 100 },
  );
}
