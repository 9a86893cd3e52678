import {
  Bus,
  provisionTopics,
  restartGroupsFromEarliest,
  topicNames,
  type DecodedRecord,
  type EventConsumer,
  type EventProducer,
} from '@tidemark/contract';
import type { TurnEvent } from '@tidemark/core';
import {
  connectionChecks,
  hostedBy,
  isRedisOutageError,
  superviseRebuild,
  logRedisOutages,
  type HostedDeps,
  type Logger,
  type ReadinessCheck,
  type RebuildSupervisor,
  type Service,
  type ServiceState,
} from '@tidemark/service';
import {
  connectRedis,
  membershipOption,
  Projection,
  RebuildOwnership,
  WatchStore,
  type RedisClient,
} from '@tidemark/state';
import type { Admin } from 'kafkajs';
import type { MaterializerConfig } from './config.js';
import { DeadLetterLog } from './dead-letters.js';
import { logStalls, ParkedTurns } from './parked.js';
import { RebuildProgress } from './rebuild-progress.js';
import { RegressionWatcher } from './regressions.js';
import { materializerMetrics, type MaterializerMetrics } from './metrics.js';

// The materializer: a thin shell around Projection. It consumes turns.l0 in its own group, applies each
// fetched batch with one applyBatchInEpoch (one Redis round trip), dead-letters what the projection
// refused or skipped (core's reason codes; the projection has already marked the session broken), and
// lets the contract commit the batch. It rebuilds the projection from the beginning of L0 whenever the
// projection's epoch is gone (Redis flushed or restarted empty, or the `rebuild` command).

export interface MaterializerDeps extends HostedDeps {
  /** A Redis connection to use (not closed on stop); one of its own when absent. */
  readonly redis?: RedisClient;
  readonly clientId?: string;
}

/** Where the materializer is; `rebuilding` from the rebuild's start until its replay caught up. */
type Phase = 'idle' | 'running' | 'rebuilding' | 'stopped';

export interface Materializer extends Service {
  readonly projection: Projection;
  /** Rebuilds the projection from L0 now; resolves once the replay has started (not caught up). */
  rebuild(reason: string): Promise<void>;
  /** Resolves once no rebuild is under way or asked for (or rejects after `timeoutMs`). */
  caughtUp(timeoutMs: number): Promise<void>;
}

export function create(config: MaterializerConfig, deps: MaterializerDeps = {}): Materializer {
  return new MaterializerService(config, deps);
}

class MaterializerService implements Materializer {
  readonly projection: Projection;
  readonly dependencies: Readonly<Record<string, ReadinessCheck>>;
  readonly #config: MaterializerConfig;
  readonly #logger: Logger;
  readonly #metrics: MaterializerMetrics;
  readonly #redis: RedisClient;
  readonly #ownsRedis: boolean;
  readonly #clientId: string;
  readonly #topics: ReturnType<typeof topicNames>;
  #bus: Bus | null = null;
  #parked: ParkedTurns | null = null;
  #producer: EventProducer | null = null;
  #admin: Admin | null = null;
  #consumer: EventConsumer | null = null;
  #epoch: string | null = null;
  #state: Phase = 'idle';
  readonly #rebuilds: RebuildSupervisor;
  readonly #ownership: RebuildOwnership;
  readonly #regressions: RegressionWatcher;
  /** Stopped and disconnected (`stopped` is set as the stop begins: nothing new starts from there). */
  #closed = false;
  #progress: RebuildProgress | null = null;
  /** The write that clears a finished rebuild's mark, while it is in flight. */
  #finishing: Promise<boolean> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #ticking = false;
  readonly #deadLetters = new DeadLetterLog();
  readonly #onRedisReady = (): void => {
    void this.#checkEpoch('redis ready');
  };

  constructor(config: MaterializerConfig, deps: MaterializerDeps) {
    this.#config = config;
    const hosted = hostedBy('materializer', config.LOG_LEVEL, deps);
    this.#logger = hosted.logger;
    this.#clientId = deps.clientId ?? 'tidemark-materializer';
    this.#ownsRedis = deps.redis === undefined;
    // maxRetriesPerRequest null: while Redis is away, commands wait for it instead of failing the batch
    // after a few tries (a failed batch is redelivered anyway, but waiting is quieter). ioredis
    // reconnects by itself; an outage is told once, not as an error per reconnect.
    this.#redis =
      deps.redis ??
      logRedisOutages(connectRedis(config, { maxRetriesPerRequest: null }), this.#logger, 'materializer');
    // Commands wait while Redis is away, and nothing answers a frozen one: the pings have a deadline.
    this.dependencies = connectionChecks(
      { redis: () => this.#redis, kafka: () => this.#bus },
      config.DEPENDENCY_TIMEOUT_MS,
    );
    this.projection = new Projection(this.#redis, {
      prefix: config.REDIS_PREFIX,
      maxParkedTurns: config.MAX_PARKED_TURNS,
    });
    this.#topics = topicNames(config.TOPIC_PREFIX);
    this.#metrics = materializerMetrics(
      hosted.metrics,
      async () => (this.#consumer === null ? null : this.#consumer.lag()),
      () => this.projection.stalledSessions(),
    );
    this.#regressions = new RegressionWatcher(
      new WatchStore(this.#redis, { prefix: config.REDIS_PREFIX }),
      this.#metrics,
      this.#logger,
    );
    const lockError = (error: unknown) => this.#logger.warn({ err: error }, 'rebuild lock: Redis failed');
    this.#ownership = new RebuildOwnership(this.projection.lifecycle, lockError);
    this.#rebuilds = superviseRebuild({
      what: 'projection',
      logger: this.#logger,
      attempt: (reason) => this.#rebuildFromL0(reason),
    });
  }

  get state(): ServiceState {
    switch (this.#state) {
      case 'idle':
        return 'starting';
      case 'rebuilding':
        return 'rebuilding';
      case 'stopped':
        return this.#closed ? 'stopped' : 'draining';
      case 'running':
        return this.#consumer?.ready() === true && this.#redis.status === 'ready' ? 'ready' : 'starting';
    }
  }

  async run(): Promise<void> {
    if (this.#state !== 'idle') throw new Error(`the materializer is ${this.#state}, not idle`);
    const bus = await Bus.connect({
      brokers: this.#config.KAFKA_BROKERS,
      registryUrl: this.#config.SCHEMA_REGISTRY_URL,
      clientId: this.#clientId,
      topics: this.#topics,
      service: 'materializer',
      logger: this.#logger,
    });
    this.#bus = bus;
    this.#parked = new ParkedTurns(bus, this.projection, this.#logger, (count) =>
      this.#metrics.turns('republished', count),
    );
    this.#admin = bus.kafka.admin();
    await this.#admin.connect();
    if (this.#config.PROVISION_TOPICS) {
      await provisionTopics(this.#admin, this.#topics, { partitions: this.#config.TOPIC_PARTITIONS });
    }
    this.#producer = await bus.producer();
    this.#redis.on('ready', this.#onRedisReady);

    const [epoch, mark] = await Promise.all([this.projection.epoch(), this.projection.rebuilding()]);
    if (epoch === null || mark !== null) {
      // Lost, never built, asked for by the rebuild command, or a rebuild interrupted by a crash: the
      // replay starts over from the beginning (its writes are idempotent, so starting over is safe).
      this.#state = 'running';
      await this.rebuild(epoch === null ? 'projection missing at start' : 'rebuild unfinished at start');
    } else {
      this.#epoch = epoch;
      this.#state = 'running';
      await this.#startConsumer();
    }
    this.#timer = setInterval(() => void this.#tick(), this.#config.EPOCH_CHECK_MS);
    this.#logger.info({ epoch: this.#epoch, topic: this.#topics.turns }, 'materializer started');
  }

  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    this.#state = 'stopped';
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#redis.off('ready', this.#onRedisReady);
    await this.#rebuilds.stop();
    await this.#ownership.release();
    // The consumer finishes its current batch (applied and dead-lettered) and commits it.
    await this.#consumer?.stop();
    this.#consumer = null;
    await this.#admin?.disconnect().catch(() => undefined);
    await this.#parked?.close().catch(() => undefined);
    await this.#bus?.disconnect();
    if (this.#ownsRedis) await this.#redis.quit().catch(() => this.#redis.disconnect());
    this.#closed = true;
    this.#logger.info('materializer stopped');
  }

  rebuild(reason: string): Promise<void> {
    // Never rejects: a rebuild that fails (Kafka away, the group not yet empty) is retried with backoff
    // until one succeeds, so the service recovers on its own.
    return this.#rebuilds.run(reason);
  }

  async caughtUp(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#rebuilds.running || this.#progress !== null || this.#finishing !== null) {
      if (Date.now() > deadline) throw new Error(`the rebuild did not catch up within ${timeoutMs} ms`);
      await this.#maybeFinishRebuild();
      await sleep(20);
    }
  }

  async #rebuildFromL0(reason: string): Promise<void> {
    const admin = this.#admin;
    const stopped = (): boolean => this.#state === 'stopped';
    if (admin === null || stopped()) return;
    this.#logger.warn({ reason }, 'rebuilding the projection from L0');
    this.#metrics.rebuildStarted(reason);
    this.#metrics.rebuilding(true);
    this.#state = 'rebuilding';
    // From here on, batches of the old consumer are dropped unapplied (their commits do not matter: the
    // group is reset to the beginning below).
    this.#epoch = null;
    this.#progress = null;
    this.#parked?.dropDeferred();
    await this.#consumer?.stop();
    this.#consumer = null;
    const turn = await this.#ownership.take(stopped, () => this.projection.wholeEpoch());
    if (turn === null) return;
    if (!turn.rebuild) {
      this.#logger.info({ epoch: turn.epoch }, 'another materializer rebuilt the projection: running on it');
      [this.#epoch, this.#state] = [turn.epoch, 'running'];
      this.#metrics.rebuilding(false);
      return this.#startConsumer();
    }
    const epoch = await this.projection.beginRebuild(reason);
    await restartGroupsFromEarliest(admin, [this.#config.MATERIALIZER_GROUP_ID], {
      stopped,
      onRetry: (error, attempt) =>
        this.#logger.warn({ err: error, attempt }, 'resetting the group offsets failed; retrying'),
    });
    const ends = await admin.fetchTopicOffsets(this.#topics.turns);
    if (stopped()) return;
    this.#progress = new RebuildProgress(epoch, ends);
    this.#epoch = epoch;
    await this.#startConsumer();
    this.#progress.lastBatchAt = Date.now();
    this.#logger.info({ epoch, targets: this.#progress.describeTargets() }, 'rebuild replaying L0');
    await this.#maybeFinishRebuild();
  }

  async #maybeFinishRebuild(): Promise<void> {
    const progress = this.#progress;
    if (progress === null || this.#consumer === null) return;
    const reachedAll = progress.reachedAll();
    const idle =
      this.#consumer.ready() &&
      progress.inFlight === 0 &&
      Date.now() - progress.lastBatchAt >= this.#config.REBUILD_IDLE_MS;
    if (!reachedAll && !idle) return;
    // Before the rebuild's mark is cleared: a crash before the parked turns it released are published
    // leaves it unfinished, and the next start rebuilds (and releases them) again. A failure is retried.
    await this.#flushParked();
    this.#progress = null;
    // Until the mark is cleared the rebuild is not over: caughtUp waits for this write too.
    const finishing = this.projection.finishRebuild(progress.epoch);
    this.#finishing = finishing;
    try {
      if (await finishing) {
        await this.#ownership.release();
        this.#state = this.#state === 'rebuilding' ? 'running' : this.#state;
        this.#metrics.rebuilding(false);
        this.#logger.info({ epoch: progress.epoch, reachedAll }, 'rebuild caught up');
      }
    } finally {
      if (this.#finishing === finishing) this.#finishing = null;
    }
  }

  async #startConsumer(): Promise<void> {
    const bus = this.#bus;
    if (bus === null) return;
    const consumer = bus.consumer({
      groupId: this.#config.MATERIALIZER_GROUP_ID,
      role: 'turns',
      fromBeginning: true,
      partitionsConsumedConcurrently: this.#config.PARTITIONS_CONSUMED_CONCURRENTLY,
      sessionTimeout: this.#config.CONSUMER_SESSION_TIMEOUT_MS,
      ...membershipOption(this.#redis, {
        prefix: this.#config.REDIS_PREFIX,
        groupId: this.#config.MATERIALIZER_GROUP_ID,
        service: 'materializer',
        instanceId: this.#config.INSTANCE_ID,
      }),
      // Redis away: its outage is told once (logRedisOutages); the batch is redelivered.
      reportedBy: isRedisOutageError,
      onBatch: (records) => this.#onBatch(records),
      onDeadLetter: (_record, reason) => this.#metrics.deadLetter(reason),
    });
    this.#consumer = consumer;
    await consumer.run();
  }

  async #onBatch(records: DecodedRecord<TurnEvent>[]): Promise<void> {
    const epoch = this.#epoch;
    const producer = this.#producer;
    // A rebuild is starting: drop the batch; the group will be reset to the beginning.
    if (epoch === null || producer === null || records.length === 0) return;
    const progress = this.#progress?.epoch === epoch ? this.#progress : null;
    if (progress !== null) progress.inFlight++;
    try {
      await this.#applyBatch(epoch, producer, records);
    } finally {
      if (progress !== null) progress.inFlight--;
    }
    if (progress !== null && this.#progress === progress) {
      progress.applied(records[records.length - 1]!.raw);
      await this.#maybeFinishRebuild();
    }
  }

  async #applyBatch(
    epoch: string,
    producer: EventProducer,
    records: DecodedRecord<TurnEvent>[],
  ): Promise<void> {
    const started = process.hrtime.bigint();
    // A rebuild replays history: what it replays was watched (or not) when it first came.
    const rebuilding = this.#progress?.epoch === epoch;
    const applied = await this.projection.applyBatchInEpoch(
      epoch,
      records.map((record) => ({
        turn: record.value,
        partition: record.raw.partition,
        offset: record.raw.offset,
      })),
      rebuilding ? undefined : this.#regressions.watching(records.map((r) => r.value)),
    );
    if (!applied.ok) {
      // Flushed (or rebuilt elsewhere) before or during this batch: its outcomes describe lost state.
      this.#logger.warn({ expected: epoch, found: applied.epoch }, 'projection epoch changed under a batch');
      void this.rebuild('projection lost');
      return;
    }
    const told = { metrics: this.#metrics, logger: this.#logger };
    await this.#deadLetters.publish(producer, records, applied.outcomes, told);
    if (applied.released.length > 0 && this.#parked !== null) {
      if (this.#progress?.epoch === epoch) this.#parked.defer(applied.released);
      else await this.#parked.republish(producer, records, applied.released);
    }
    logStalls(this.#logger, applied.stalls);
    if (applied.alongside !== undefined) {
      await this.#regressions.publish(producer, applied.outcomes, applied.alongside);
    }
    this.#metrics.outcomes(applied.outcomes);
    this.#metrics.applied(Number(process.hrtime.bigint() - started) / 1e9, records.length);
  }

  async #flushParked(): Promise<void> {
    if (this.#producer !== null) await this.#parked?.flushDeferred(this.#producer);
  }

  async #tick(): Promise<void> {
    if (this.#ticking || this.#state === 'stopped') return;
    this.#ticking = true;
    try {
      await this.#checkEpoch('periodic check');
      await this.#maybeFinishRebuild();
      if (this.#state === 'running') await this.#flushParked();
    } catch (error) {
      this.#logger.warn({ err: error }, 'periodic check failed (epoch, rebuild, parked turns); retried');
    } finally {
      this.#ticking = false;
    }
  }

  /** Rebuilds when the projection's epoch is not the one this materializer writes under. */
  async #checkEpoch(why: string): Promise<void> {
    if (this.#state !== 'running' && this.#state !== 'rebuilding') return;
    if (this.#rebuilds.running || this.#epoch === null) return;
    const expected = this.#epoch;
    const current = await this.projection.epoch();
    if (current === expected || this.#rebuilds.running || this.#epoch !== expected) return;
    this.#logger.warn({ why, expected, found: current }, 'projection epoch gone');
    await this.rebuild(current === null ? 'projection lost' : 'epoch replaced');
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
