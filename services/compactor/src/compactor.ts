import { randomUUID } from 'node:crypto';
import { Bus, provisionTopics, topicNames, type EventConsumer, type EventProducer } from '@tidemark/contract';
import { createLogger, Registry, type Logger, type ServiceComponent } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { Redis } from 'ioredis';
import type { Admin } from 'kafkajs';
import { policiesOf, type CompactorConfig } from './config.js';
import { CompactionEngine, engineMetrics, namespaceOf, summarizers, WindowsLostError } from './engine.js';
import { CompactorStore } from './store.js';

// The compactor service: turns.l0 → windows → compactions; markers (MarkerInvalid of its own nodes) →
// strict repairs. A shell around the engine: config, wiring, two consumers, readiness, shutdown.

export interface CompactorDeps {
  readonly logger?: Logger;
  /** The metrics registry (the host's); a new one when absent. */
  readonly metrics?: Registry;
  /** A Redis connection to use (not closed on stop); one of its own when absent. */
  readonly redis?: Redis;
}

export interface Compactor extends ServiceComponent {
  /** The store namespace this compactor writes (generation and policy). */
  readonly namespace: string;
}

export function createCompactor(config: CompactorConfig, deps: CompactorDeps = {}): Compactor {
  const logger = deps.logger ?? createLogger('compactor', config.LOG_LEVEL);
  const register = deps.metrics ?? new Registry();
  const policies = policiesOf(config);
  const policy = policies.base;
  const summarizerOf = summarizers({ baseUrl: config.MODEL_BASE_URL, apiKey: config.MODEL_API_KEY });
  // Every named summarizer is made now: a bad name fails the start, not the first compaction.
  for (const p of [policy, ...Object.values(policies.overrides)]) summarizerOf(p.summarizer);
  const namespace = namespaceOf(config.GENERATION, policy, policies.overrides);
  const metrics = engineMetrics(register);
  const topics = topicNames(config.TOPIC_PREFIX);
  const markersGroup = `${config.GROUP_ID}.markers`;

  let bus: Bus | null = null;
  let redis: Redis | null = null;
  let producer: EventProducer | null = null;
  let turns: EventConsumer | null = null;
  let markers: EventConsumer | null = null;
  let engine: CompactionEngine | null = null;
  let store: CompactorStore | null = null;
  let rebuilding: Promise<void> | null = null;
  let stopped = false;

  const turnsConsumer = (b: Bus): EventConsumer =>
    b.consumer({
      groupId: config.GROUP_ID,
      role: 'turns',
      sessionTimeout: config.CONSUMER_SESSION_TIMEOUT_MS,
      // Partitions hold disjoint sessions: their batches overlap each other's round trips.
      partitionsConsumedConcurrently: config.COMPACTOR_PARTITIONS_CONCURRENTLY,
      onBatch: async (records) => {
        try {
          await engine!.onTurns(records);
        } catch (error) {
          if (error instanceof WindowsLostError) rebuild();
          throw error;
        }
      },
    });

  /**
   * Redis lost the windows (flushed) while running: every window is rebuilt by reading turns.l0 again
   * from the start. Nothing is lost (turns.l0 keeps everything) and what is recomputed is published again
   * under the same ids with the same bytes. Runs outside the batch that noticed (a consumer cannot stop
   * itself from inside its own batch).
   */
  const rebuild = (): void => {
    if (rebuilding !== null || stopped) return;
    rebuilding = (async () => {
      logger.warn({ namespace }, 'compactor state lost: rebuilding windows from the start of turns.l0');
      await turns?.stop();
      const admin = await bus!.admin();
      await restartFromEarliest(admin, config.GROUP_ID, topics.turns, logger);
      await store!.setEpoch(randomUUID());
      if (stopped) return;
      turns = turnsConsumer(bus!);
      await turns.run();
    })()
      .catch((error: unknown) => logger.error({ err: error }, 'rebuilding the compactor windows failed'))
      .finally(() => {
        rebuilding = null;
      });
  };

  return {
    namespace,
    async start() {
      bus = await Bus.connect({
        brokers: config.KAFKA_BROKERS,
        registryUrl: config.SCHEMA_REGISTRY_URL,
        clientId: `${config.GROUP_ID}-${randomUUID().slice(0, 8)}`,
        topics,
        service: 'compactor',
        logger,
      });
      const admin = await bus.admin();
      await provisionTopics(admin, topics, { partitions: config.PARTITIONS });
      redis = deps.redis ?? new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
      store = new CompactorStore(redis, { prefix: config.REDIS_PREFIX, namespace });
      if (!(await store.hasEpoch())) {
        // A new namespace (first start, new policy or generation) or a flushed Redis: the windows are
        // built from the start of turns.l0, whatever the group had committed before.
        await restartFromEarliest(admin, config.GROUP_ID, topics.turns, logger);
        await store.setEpoch(randomUUID());
      }
      producer = await bus.producer();
      engine = new CompactionEngine({
        policyFor: policies.policyFor,
        generation: config.GENERATION,
        compactorVersion: config.COMPACTOR_VERSION,
        summarizerFor: summarizerOf,
        maxRepairs: config.MAX_REPAIRS,
        stateWaitMs: config.STATE_WAIT_MS,
        store,
        projection: new Projection(redis, { prefix: config.REDIS_PREFIX }),
        producer,
        metrics,
        logger,
      });
      turns = turnsConsumer(bus);
      markers = bus.consumer({
        groupId: markersGroup,
        role: 'markers',
        sessionTimeout: config.CONSUMER_SESSION_TIMEOUT_MS,
        onBatch: async (records) => {
          await engine!.onMarkers(records);
        },
      });
      await Promise.all([turns.run(), markers.run()]);
      logger.info(
        {
          namespace,
          generation: config.GENERATION,
          policy,
          overrides: Object.keys(policies.overrides),
          groupId: config.GROUP_ID,
        },
        'compactor running',
      );
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await rebuilding;
      await Promise.all([turns?.stop(), markers?.stop()]);
      await bus?.disconnect();
      if (deps.redis === undefined) redis?.disconnect();
    },
    ready() {
      return !stopped && rebuilding === null && (turns?.ready() ?? false) && (markers?.ready() ?? false);
    },
  };
}

/** Points the group at the start of the topic (a group with members cannot be moved: logged, left). */
export async function restartFromEarliest(
  admin: Admin,
  groupId: string,
  topic: string,
  logger: Logger,
): Promise<void> {
  // A group that never committed reads from the start anyway (and moving one costs seconds).
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
  if (committed.every((t) => t.partitions.every((p) => Number(p.offset) < 0))) return;
  try {
    await admin.resetOffsets({ groupId, topic, earliest: true });
  } catch (error) {
    logger.warn({ err: error, groupId }, 'could not move the group to the start of turns.l0');
  }
}
