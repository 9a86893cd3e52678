import {
  Bus,
  provisionTopics,
  SessionHistory,
  topicNames,
  type EventConsumer,
  type EventProducer,
  type RawRecord,
} from '@tidemark/contract';
import { FrameStore, membershipOption, Projection, connectRedis, type RedisClient } from '@tidemark/state';
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
import { decideBatch, type BatchInput, type ProjectionReader } from './batch.js';
import type { ValidatorConfig } from './config.js';
import { validatorMetrics } from './metrics.js';
import { rebuildFrames, restoreExpired } from './rebuild.js';
import { decideRevocations } from './revocations.js';

// The validator service: a thin shell around decide.ts and batch.ts. It consumes compactions in its own
// group, decides each against the L0 projection, and publishes the decisions to the markers topic.

export interface ValidatorDeps extends HostedDeps {
  /** A Redis connection to use (not closed on stop); one of its own when absent. */
  readonly redis?: RedisClient;
  /** The projection to read (tests inject a slow one); over the Redis connection when absent. */
  readonly projection?: ProjectionReader;
  readonly clientId?: string;
  /** Create the topics if missing (local runs and tests); default true. */
  readonly provision?: boolean;
}

export interface Validator extends Service {
  /** The frame store it keeps (tests and tools read it). */
  readonly frames: FrameStore;
}

export function create(config: ValidatorConfig, deps: ValidatorDeps = {}): Validator {
  const hosted = hostedBy('validator', config.LOG_LEVEL, deps);
  const logger = hosted.logger;
  const metrics = validatorMetrics(hosted.metrics);
  const ownsRedis = deps.redis === undefined;
  // Auto-pipelining: the boundary reads of a batch, issued together, leave in one round trip.
  // A command fails after the client's retries (Redis down): the batch throws and is redelivered.
  // ioredis reconnects by itself; an outage is told once, not as an error per reconnect.
  const redis =
    deps.redis ?? logRedisOutages(connectRedis(config, { enableAutoPipelining: true }), logger, 'validator');
  const frames = new FrameStore(redis, {
    prefix: config.REDIS_PREFIX,
    retentionMs: config.STATE_RETENTION_MS,
  });
  const projection: ProjectionReader =
    deps.projection ?? new Projection(redis, { prefix: config.REDIS_PREFIX });
  const topics = topicNames(config.TOPIC_PREFIX);

  let bus: Bus | null = null;
  let history: SessionHistory | null = null;
  let producer: EventProducer | null = null;
  let consumer: EventConsumer | null = null;
  let revocations: EventConsumer | null = null;
  let phase: ServicePhase = 'idle';
  let stopping: Promise<void> | null = null;
  // While the store has no epoch nobody decides: a batch that finds it missing waits for the rebuild.
  const rebuilds = superviseRebuild({
    what: 'frame store',
    logger,
    attempt: () =>
      rebuildFrames({
        bus: bus!,
        frames,
        logger,
        lockMs: config.REBUILD_LOCK_MS,
        onRebuilt: (sessions) => metrics.rebuilt(sessions),
      }),
  });
  const rebuild = () => rebuilds.run('frame store has no epoch');

  return {
    frames,
    // Nothing answers a frozen Redis or broker: the pings have a deadline.
    dependencies: connectionChecks({ redis: () => redis, kafka: () => bus }, config.DEPENDENCY_TIMEOUT_MS),
    get state() {
      const ready = (consumer?.ready() ?? false) && (revocations?.ready() ?? false);
      return stateOf(phase, rebuilds.running, ready);
    },
    async run() {
      phase = 'starting';
      bus = await Bus.connect({
        brokers: config.KAFKA_BROKERS,
        registryUrl: config.SCHEMA_REGISTRY_URL,
        clientId: deps.clientId ?? 'tidemark-validator',
        topics,
        service: 'validator',
        logger,
      });
      if (deps.provision ?? true) {
        const admin = bus.kafka.admin();
        await admin.connect();
        try {
          await provisionTopics(admin, topics, { partitions: config.TOPIC_PARTITIONS });
        } finally {
          await admin.disconnect();
        }
      }
      const connected = bus;
      const sessions = new SessionHistory(connected);
      history = sessions;
      producer = await connected.producer();
      // Build the store before the first batch, so readiness means "can decide".
      if ((await frames.epoch()) === null) await rebuild();

      const sender = producer;
      consumer = connected.consumer({
        groupId: config.VALIDATOR_GROUP_ID,
        role: 'compactions',
        fromBeginning: true,
        // Partitions hold disjoint sessions: one waiting on a lagging session does not hold up the others.
        partitionsConsumedConcurrently: config.PARTITIONS_CONCURRENTLY,
        sessionTimeout: config.SESSION_TIMEOUT_MS,
        ...membershipOption(redis, {
          prefix: config.REDIS_PREFIX,
          groupId: config.VALIDATOR_GROUP_ID,
          service: 'validator',
          instanceId: config.INSTANCE_ID,
        }),
        // Redis away: its outage is told once, by logRedisOutages; a refused frame write (told of as
        // "frame write refused") is a retriable error the bus redelivers quietly by itself.
        reportedBy: isRedisOutageError,
        onBatch: async (records, context) => {
          if (records.length === 0) return;
          const inputs: BatchInput[] = records.map((record) => ({
            node: record.value,
            appendedAt: appendTimeOf(record.raw),
          }));
          const outcome = await decideBatch(
            {
              frames,
              projection,
              publish: (decisions) => sender.send('markers', decisions),
              rebuild,
              restoreExpired: (epoch, refs) => restoreExpired({ frames, history: sessions }, epoch, refs),
              metrics,
              logger,
              watermarkTimeoutMs: config.WATERMARK_TIMEOUT_MS,
              check: { artifacts: config.CHECK_ARTIFACTS },
            },
            inputs,
            () => context.heartbeat(),
          );
          logger.debug({ partition: context.partition, ...outcome }, 'batch decided');
        },
      });
      // Operators' revocations: decided on the same frames, through the same write-ahead path. Its own
      // group, so a revocation never waits behind a backlog of compactions.
      revocations = connected.consumer({
        groupId: `${config.VALIDATOR_GROUP_ID}-revocations`,
        role: 'revocations',
        fromBeginning: true,
        partitionsConsumedConcurrently: config.PARTITIONS_CONCURRENTLY,
        sessionTimeout: config.SESSION_TIMEOUT_MS,
        ...membershipOption(redis, {
          prefix: config.REDIS_PREFIX,
          groupId: `${config.VALIDATOR_GROUP_ID}-revocations`,
          service: 'validator',
          instanceId: config.INSTANCE_ID,
        }),
        reportedBy: isRedisOutageError,
        onBatch: async (records, context) => {
          if (records.length === 0) return;
          const outcome = await decideRevocations(
            {
              frames,
              publish: (decisions) => sender.send('markers', decisions),
              rebuild,
              restoreExpired: (epoch, refs) => restoreExpired({ frames, history: sessions }, epoch, refs),
              metrics,
              logger,
            },
            records.map((record) => record.value),
          );
          logger.debug({ partition: context.partition, ...outcome }, 'revocations decided');
        },
      });
      await Promise.all([consumer.run(), revocations.run()]);
      phase = 'running';
      logger.info(
        {
          topics: [topics.compactions, topics.revocations],
          group: config.VALIDATOR_GROUP_ID,
          timeoutMs: config.WATERMARK_TIMEOUT_MS,
        },
        'validator consuming',
      );
    },
    stop() {
      stopping ??= (async () => {
        phase = 'draining';
        await rebuilds.stop();
        // Intake first (the current batch finishes and commits), then the producer, then connections.
        await Promise.all([consumer?.stop(), revocations?.stop()]);
        await producer?.disconnect();
        await history?.close();
        await bus?.disconnect();
        if (ownsRedis) await redis.quit().catch(() => undefined);
        phase = 'stopped';
      })();
      return stopping;
    },
  };
}

/** The Kafka timestamp of a compaction record (its append, for a CreateTime topic), if known. */
function appendTimeOf(raw: RawRecord): number | null {
  const value = raw.timestamp;
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : null;
}
