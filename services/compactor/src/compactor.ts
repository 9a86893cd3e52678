import { randomUUID } from 'node:crypto';
import {
  Bus,
  restartGroupsFromEarliest,
  SessionHistory,
  provisionTopics,
  topicNames,
  type EventConsumer,
  type EventProducer,
} from '@tidemark/contract';
import {
  connectionChecks,
  hostedBy,
  isRedisOutageError,
  logRedisOutages,
  stateOf,
  superviseRebuild,
  type HostedDeps,
  type Service,
  type ServicePhase,
} from '@tidemark/service';
import {
  membershipOption,
  Projection,
  RebuildOwnership,
  WindowMovedError,
  WindowsLostError,
  WindowStore,
  connectRedis,
  type RedisClient,
} from '@tidemark/state';
import type { Admin } from 'kafkajs';
import { policiesOf, type CompactorConfig } from './config.js';
import { CompactionEngine, namespaceOf } from './engine.js';
import { summarizers } from './summarizers.js';
import { engineMetrics } from './metrics.js';
import type { SessionWindow } from './window.js';

// The compactor service: turns.l0 → windows → compactions (a lossy node followed by its strict repair).
// A shell around the engine: config, wiring, one consumer, readiness, shutdown. It reads no decision:
// what it publishes is a function of L0 and the policy alone.

export interface CompactorDeps extends HostedDeps {
  /** A Redis connection to use (not closed on stop); one of its own when absent. */
  readonly redis?: RedisClient;
}

export interface Compactor extends Service {
  /** The store namespace this compactor writes (generation and policy). */
  readonly namespace: string;
}

export function create(config: CompactorConfig, deps: CompactorDeps = {}): Compactor {
  const { logger, metrics: register } = hostedBy('compactor', config.LOG_LEVEL, deps);
  const policies = policiesOf(config);
  const policy = policies.base;
  const summarizerOf = summarizers({ baseUrl: config.MODEL_BASE_URL, apiKey: config.MODEL_API_KEY });
  // Every named summarizer is made now: a bad name fails the start, not the first compaction.
  for (const p of [policy, ...Object.values(policies.overrides)]) summarizerOf(p.summarizer);
  const namespace = namespaceOf(config.GENERATION, policy, policies.overrides);
  const metrics = engineMetrics(register);
  const topics = topicNames(config.TOPIC_PREFIX);

  let bus: Bus | null = null;
  let redis: RedisClient | null = null;
  let producer: EventProducer | null = null;
  let turns: EventConsumer | null = null;
  let engine: CompactionEngine | null = null;
  let store: WindowStore<SessionWindow> | null = null;
  let sessions: SessionHistory | null = null;
  let ownership: RebuildOwnership | null = null;
  /** The windows' epoch this instance writes under; null until it has one (at start, in a rebuild). */
  let epoch: string | null = null;
  /** The epoch the last rebuild replaced (what a waiting instance must not take for a rebuilt one). */
  let replaced: string | null = null;
  let epochCheck: NodeJS.Timeout | null = null;
  let phase: ServicePhase = 'idle';
  const stopped = (): boolean => phase === 'draining' || phase === 'stopped';

  const turnsConsumer = (b: Bus): EventConsumer =>
    b.consumer({
      groupId: config.GROUP_ID,
      role: 'turns',
      sessionTimeout: config.CONSUMER_SESSION_TIMEOUT_MS,
      ...(redis === null
        ? {}
        : membershipOption(redis, {
            prefix: config.REDIS_PREFIX,
            groupId: config.GROUP_ID,
            service: 'compactor',
            instanceId: config.INSTANCE_ID,
          })),
      // Partitions hold disjoint sessions: their batches overlap each other's round trips.
      partitionsConsumedConcurrently: config.COMPACTOR_PARTITIONS_CONCURRENTLY,
      // Redis away: its outage is told once (logRedisOutages); the batch is redelivered.
      reportedBy: isRedisOutageError,
      onBatch: async (records) => {
        try {
          await engine!.onTurns(records);
        } catch (error) {
          // Told of here, once, in the compactor's words; the bus and kafkajs keep theirs at debug.
          // Both are retriable: the bus redelivers the batch without repeating the story.
          if (error instanceof WindowsLostError) rebuild(error.detail);
          if (error instanceof WindowMovedError) {
            logger.warn(
              { sessions: error.sessions },
              'windows changed under a batch (Redis lost or rebuilt): redoing it',
            );
          }
          throw error;
        }
      },
    });

  /**
   * Builds the namespace anew from turns.l0: the consumer stopped, every key of the namespace deleted
   * under a new epoch, turns.l0 replayed from the start; done once the replay has passed every turn that
   * was on turns.l0 when it began. What is recomputed is published again under the same ids with the
   * same bytes (the validator decides nothing twice). Ready again after.
   *
   * Another instance of the group may rebuild too: one does, holding the windows' rebuild lock from
   * before the group reset until its replay caught up (RebuildOwnership). It drops the epoch first, so
   * every other instance notices (a batch, or the periodic check) and steps out of the group, which the
   * reset needs empty; they wait, then run on the epoch it set. Without the lock, an instance that
   * noticed late started a second rebuild whose group reset waited for good on the first's consumer.
   */
  const replayFromStart = async (reason: string, attempt: number): Promise<void> => {
    // Kept across a failed attempt's retries: the epoch this rebuild replaces is never one to run on.
    if (epoch !== null) replaced = epoch;
    const lost = replaced;
    epoch = null;
    await turns?.stop();
    turns = null;
    // Another instance's new epoch (set once its group reset is done) is one to run on.
    const turn = await ownership!.take(stopped, async () => {
      const now = await store!.lifecycle.epoch();
      return now !== null && now !== lost ? now : null;
    });
    if (turn === null) return;
    if (!turn.rebuild) {
      logger.info({ namespace, epoch: turn.epoch }, 'another compactor rebuilt the windows: running on them');
      epoch = turn.epoch;
      turns = turnsConsumer(bus!);
      await turns.run();
      return;
    }
    await store!.lifecycle.dropEpoch();
    const admin = await bus!.admin();
    const ends = await admin.fetchTopicOffsets(topics.turns);
    await restartGroupsFromEarliest(admin, [config.GROUP_ID], {
      stopped,
      onRetry: (error, tries) =>
        logger.warn({ err: error, attempt: tries }, 'resetting the group offsets failed; retrying'),
    });
    const next = randomUUID();
    const deleted = await store!.lifecycle.reset(next);
    if (stopped()) return;
    epoch = next;
    turns = turnsConsumer(bus!);
    await turns.run();
    logger.info(
      { namespace, reason, deletedKeys: deleted, attempt },
      'compactor windows cleared; replaying turns.l0 from the start',
    );
    await committedUpTo(admin, config.GROUP_ID, topics.turns, ends, stopped);
    await ownership!.release();
  };
  const rebuilds = superviseRebuild({
    what: 'compactor windows',
    logger,
    attempt: replayFromStart,
    afterFailure: async () => {
      await turns?.stop();
    },
  });

  /**
   * Redis lost the compactor's state while running: rebuilt from the topics (replayFromStart), outside
   * the batch that noticed (a consumer cannot stop itself from inside its own batch).
   */
  const rebuild = (reason: string, lost = true): void => {
    if (rebuilds.running || stopped()) return;
    if (lost)
      logger.warn({ namespace, reason }, 'compactor state lost: rebuilding it from the start of the topics');
    else
      logger.info({ namespace, reason }, 'compactor state absent: building it from the start of the topics');
    void rebuilds.run(reason);
  };

  /** Rebuilds when the windows' epoch is no longer the one this instance writes under. */
  const checkEpoch = async (): Promise<void> => {
    if (rebuilds.running || stopped() || epoch === null) return;
    const now = await store!.lifecycle.epoch();
    if (now === epoch || rebuilds.running || epoch === null) return;
    rebuild(now === null ? 'the windows epoch is gone' : 'another compactor is rebuilding the windows');
  };

  return {
    namespace,
    // Nothing answers a frozen Redis or broker: the pings have a deadline.
    dependencies: connectionChecks({ redis: () => redis, kafka: () => bus }, config.DEPENDENCY_TIMEOUT_MS),
    get state() {
      return stateOf(phase, rebuilds.running, turns?.ready() ?? false);
    },
    async run() {
      phase = 'starting';
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
      // ioredis reconnects by itself; an outage is told once, not as an error per reconnect.
      redis =
        deps.redis ??
        logRedisOutages(connectRedis(config, { maxRetriesPerRequest: null }), logger, 'compactor');
      store = new WindowStore<SessionWindow>(redis, {
        prefix: config.REDIS_PREFIX,
        namespace,
        retentionMs: config.STATE_RETENTION_MS,
      });
      const history = new SessionHistory(bus);
      sessions = history;
      ownership = new RebuildOwnership(store.lifecycle, (error) =>
        logger.warn({ err: error }, 'renewing the windows rebuild lock failed; it may lapse'),
      );
      epoch = await store.lifecycle.epoch();
      producer = await bus.producer();
      engine = new CompactionEngine({
        policyFor: policies.policyFor,
        generation: config.GENERATION,
        compactorVersion: config.COMPACTOR_VERSION,
        summarizerFor: summarizerOf,
        maxRepairs: config.MAX_REPAIRS,
        stateWaitMs: config.STATE_WAIT_MS,
        sessionsPerStep: config.BATCH_SESSIONS,
        store,
        projection: new Projection(redis, { prefix: config.REDIS_PREFIX }),
        producer,
        metrics,
        logger,
        history: async (ref, range) => {
          const { records } = await history.read('turns', ref, range);
          return records.map((r) => ({ turn: r.value, partition: r.raw.partition, offset: r.raw.offset }));
        },
      });
      if (epoch === null) {
        // A new namespace (first start, new policy or generation) or a lost Redis: the state is built
        // from the start of the topics, whatever the groups had committed before (and whatever a batch
        // of an earlier epoch left in Redis). Not ready until it has.
        rebuild('no epoch at start (a new namespace, or Redis lost it)', false);
      } else {
        turns = turnsConsumer(bus);
        await turns.run();
      }
      // An instance with nothing to consume would never notice a loss that another's rebuild must reset
      // the group for; a failed check (Redis away) is retried at the next.
      epochCheck = setInterval(() => {
        checkEpoch().catch((error: unknown) => logger.debug({ err: error }, 'windows epoch check failed'));
      }, config.EPOCH_CHECK_MS);
      phase = 'running';
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
      if (stopped()) return;
      phase = 'draining';
      if (epochCheck !== null) clearInterval(epochCheck);
      await rebuilds.stop();
      await ownership?.release();
      await turns?.stop();
      await sessions?.close();
      await bus?.disconnect();
      if (deps.redis === undefined) redis?.disconnect();
      phase = 'stopped';
    },
  };
}

/** Resolves once the group has committed, on every partition, at least the given end offsets. */
async function committedUpTo(
  admin: Admin,
  groupId: string,
  topic: string,
  ends: readonly { partition: number; high: string; low: string }[],
  cancelled: () => boolean,
): Promise<void> {
  const wanted = ends.filter((e) => Number(e.high) > Number(e.low));
  while (!cancelled()) {
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const at = new Map(committed?.partitions.map((p) => [p.partition, Number(p.offset)]) ?? []);
    if (wanted.every((e) => (at.get(e.partition) ?? -1) >= Number(e.high))) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
