import { isRetriable, type DeadLetterReason } from '@tidemark/core';
import type { Admin, Consumer, ConsumerRunConfig, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { decodeBatch, deadLetter } from './batch-intake.js';
import type { DecodedRecord, RawRecord } from './decode.js';
import { ContractError } from './errors.js';
import { isConnectionFailure, isReported, markReported } from './outages.js';
import type { BusProducer } from './producer.js';
import type { Registry } from './registry.js';
import type { EventsByRole, TopicNames, TopicRole } from './topics.js';
import { leavePreviousMember, releaseCrashedMember, type MemberLedger } from './group-leave.js';
import { groupLag } from './group-lag.js';

// The consuming side of the bus: a batch consumer that decodes and validates every record, dead-letters
// what it cannot use and hands the rest to the service in offset order, commits a batch only once the
// service is done with it, restarts itself after a crash, and tells readiness honestly.

export interface BatchContext {
  partition: number;
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  isStale(): boolean;
}

export interface ConsumeOptions<R extends TopicRole> {
  groupId: string;
  role: R;
  /** Default true: a new group reads its topic from the start. */
  fromBeginning?: boolean;
  /**
   * Called once per fetched batch (one partition) with the records that decoded and validated, in
   * offset order (not called when none did). Records that did not were dead-lettered (reason code)
   * and are skipped. When it resolves, every offset of the batch is committed. If it throws, the batch
   * is redelivered (kafkajs retries, then the consumer restarts); nothing is committed or lost.
   */
  onBatch(records: DecodedRecord<EventsByRole[R]>[], context: BatchContext): Promise<void>;
  /** Told of every record dead-lettered by the contract (for a metric), after it was published. */
  onDeadLetter?(record: RawRecord, reason: DeadLetterReason, message: string): void;
  /**
   * Whether an error a batch threw is one the service already tells of in its own words (a dependency's
   * outage, say): the bus and kafkajs then log their lines about it at debug (see markReported).
   */
  reportedBy?(error: Error): boolean;
  /** Partitions processed at once (default 1). */
  partitionsConsumedConcurrently?: number;
  /**
   * Whether bad records go to the deadletter topic. Default: only for the topic's owner
   * (`deadLetterOwners`, by the Bus's service); any other reader skips them (and tells onDeadLetter),
   * so each bad record is dead-lettered once.
   */
  publishDeadLetters?: boolean;
  /** How long an idle fetch waits for data (default 500 ms); also bounds how long `stop()` takes. */
  maxWaitTimeInMs?: number;
  /**
   * How long the group waits for a silent member (a SIGKILLed one) before its partitions move on
   * (kafkajs default 30 s; the broker's floor is 6 s). A restarted service resumes after at most this.
   */
  sessionTimeout?: number;
  /**
   * Where this consumer's group membership is remembered across restarts of a stable instance (what
   * Kafka's group.instance.id gives other clients): before joining, the member a previous run left
   * behind (SIGKILLed, it could not leave) leaves, so the group rebalances at once rather than after
   * that member's session; every member joined as is recorded.
   */
  membership?: MemberLedger;
}

export interface EventConsumer {
  /** Connects, subscribes, starts; resolves once it has joined its group. */
  run(): Promise<void>;
  /**
   * Joined its group, not stopped, and not crashed (from instrumentation events). After a crash it
   * stays not ready, through its restarts and rejoins, until a batch went through again (on every
   * partition whose batch had failed) or, rejoined, it finds nothing to do (lag 0): a consumer that
   * crash-loops is not ready, rather than ready between crashes.
   */
  ready(): boolean;
  /** Total consumer lag of its group on its topic. */
  lag(): Promise<number>;
  /** Stops intake, finishes the current batch, commits, disconnects. */
  stop(): Promise<void>;
}

/** What a consumer needs of its Bus. */
export interface ConsumerHost {
  readonly kafka: Kafka;
  readonly topics: TopicNames;
  readonly registry: Registry;
  readonly service: string;
  readonly maxEventBytes: number;
  readonly logger: Logger | undefined;
  admin(): Promise<Admin>;
  busProducer(): Promise<BusProducer>;
  brokerAnswered(broker: string): void;
  reported(error: Error): void;
  leaveGroupAs(groupId: string, memberId: string): Promise<void>;
}

const restartBackoffMs = { initial: 250, max: 30_000 };
/** While crashed and rejoined, how often (at most) the consumer asks for its lag to see if it is caught up. */
const caughtUpProbeMs = 1_000;

export class BusConsumer<R extends TopicRole> implements EventConsumer {
  readonly #bus: ConsumerHost;
  readonly #options: ConsumeOptions<R>;
  readonly #onStopped: () => void;
  readonly #topic: string;
  #consumer: Consumer | null = null;
  #joined = false;
  /** Set by a crash; cleared once a batch went through again, or the consumer rejoined with lag 0. */
  #crashed = false;
  /** Counts crashes, so a lag probe begun before a crash cannot clear the crash that came after it. */
  #crashes = 0;
  /** Partitions whose batch threw and has not gone through since. */
  readonly #failing = new Set<number>();
  #probingLag = false;
  #lastLagProbe = 0;
  #stopping = false;
  #restartTimer: NodeJS.Timeout | null = null;
  #restartDelay = restartBackoffMs.initial;
  /** The group member this consumer joined as (kafkajs joins as a new one after every crash). */
  #memberId: string | null = null;

  constructor(bus: ConsumerHost, options: ConsumeOptions<R>, onStopped: () => void) {
    this.#bus = bus;
    this.#options = options;
    this.#onStopped = onStopped;
    this.#topic = bus.topics[options.role];
  }

  async run(): Promise<void> {
    if (this.#consumer !== null) throw new ContractError('closed', 'this consumer is already running');
    if (this.#stopping) throw new ContractError('closed', 'this consumer was stopped');
    const consumer = this.#bus.kafka.consumer({
      groupId: this.#options.groupId,
      // read_committed: a turn of an aborted or open transaction is never seen.
      readUncommitted: false,
      allowAutoTopicCreation: false,
      // A fetch waits this long for data when there is none; a stop waits for the fetch in flight, so
      // this bounds how long a graceful shutdown takes on an idle topic.
      maxWaitTimeInMs: this.#options.maxWaitTimeInMs ?? 500,
      retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 5_000 },
      ...(this.#options.sessionTimeout === undefined
        ? {}
        : {
            sessionTimeout: this.#options.sessionTimeout,
            heartbeatInterval: Math.min(3_000, Math.floor(this.#options.sessionTimeout / 3)),
          }),
    });
    this.#consumer = consumer;
    const { GROUP_JOIN, FETCH, CRASH, STOP, REQUEST } = consumer.events;
    consumer.on(GROUP_JOIN, (event) => {
      this.#joined = true;
      this.#memberId = event.payload.memberId;
      this.#options.membership
        ?.record(event.payload.memberId)
        .catch((error: unknown) =>
          this.#bus.logger?.debug(
            { err: error, groupId: this.#options.groupId },
            'recording the member failed',
          ),
        );
      // A partition that failed here and now belongs to another member is that member's to retry.
      const assigned = new Set(event.payload.memberAssignment[this.#topic] ?? []);
      for (const partition of this.#failing) if (!assigned.has(partition)) this.#failing.delete(partition);
      // Joining again is not recovering: the batch that crashed it may be the next one it fetches.
      if (this.#crashed) this.#probeCaughtUp();
    });
    consumer.on(FETCH, () => {
      if (this.#crashed && this.#joined) this.#probeCaughtUp();
    });
    consumer.on(STOP, () => {
      this.#joined = false;
    });
    consumer.on(REQUEST, (event) => this.#bus.brokerAnswered(event.payload.broker));
    consumer.on(CRASH, (event) => {
      this.#joined = false;
      this.#crashed = true;
      this.#crashes += 1;
      const abandoned = this.#memberId;
      this.#memberId = null;
      if (abandoned !== null) {
        void releaseCrashedMember(
          this.#bus,
          this.#options.groupId,
          abandoned,
          () => this.#stopping || this.#joined,
        );
      }
      const { error, restart } = event.payload;
      // A crash for want of a broker is part of an outage the Bus tells of once (see BrokerReachability).
      const level = isConnectionFailure(error) || isReported(error) ? 'debug' : 'error';
      this.#bus.logger?.[level](
        { err: error, groupId: this.#options.groupId, topic: this.#topic, restart },
        'consumer crashed',
      );
      // kafkajs restarts by itself for retriable causes; for the rest (the broker gone for longer than
      // its retries, say) this supervisor restarts it with a backoff, so the service recovers on its own.
      if (!restart && !this.#stopping) this.#scheduleRestart();
    });
    try {
      if (this.#options.membership !== undefined) {
        await leavePreviousMember(this.#bus, this.#options.groupId, this.#options.membership);
      }
      await consumer.connect();
      await consumer.subscribe({ topic: this.#topic, fromBeginning: this.#options.fromBeginning ?? true });
      await consumer.run(this.#runConfig());
    } catch (error) {
      // Not started (the broker unreachable, say): the caller may call run() again.
      this.#consumer = null;
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }
  }

  #runConfig(): ConsumerRunConfig {
    return {
      eachBatchAutoResolve: false,
      autoCommit: true,
      partitionsConsumedConcurrently: this.#options.partitionsConsumedConcurrently ?? 1,
      eachBatch: async (payload) => {
        try {
          await this.#eachBatch(payload);
        } catch (error) {
          this.#failing.add(payload.batch.partition);
          // A retriable Tidemark error is a known condition its service tells of (Redis lost, a frame
          // write refused): redelivered quietly. Anything else is logged by kafkajs as the error it is.
          const known = (e: Error) =>
            isReported(e) || isRetriable(e) || this.#options.reportedBy?.(e) === true;
          if (error instanceof Error && known(error)) this.#bus.reported(markReported(error));
          throw error;
        }
      },
    };
  }

  /** After a crash, rejoined: ready again if there is nothing to do (lag 0). At most one probe at a time. */
  #probeCaughtUp(): void {
    const now = Date.now();
    // Never while stopping: the probe would connect an admin client the Bus has just closed.
    if (this.#stopping || this.#probingLag || now - this.#lastLagProbe < caughtUpProbeMs) return;
    this.#probingLag = true;
    this.#lastLagProbe = now;
    const crashes = this.#crashes;
    this.lag()
      .then(
        (lag) => {
          if (lag === 0 && this.#crashed && this.#joined && this.#crashes === crashes) {
            this.#recovered('rejoined with nothing to do');
          }
        },
        (error: unknown) =>
          this.#bus.logger?.debug(
            { err: error, groupId: this.#options.groupId },
            'consumer lag probe failed',
          ),
      )
      .finally(() => {
        this.#probingLag = false;
      });
  }

  /** A batch of a partition went through: the consumer recovers once no partition is left failing. */
  #batchDone(partition: number): void {
    this.#failing.delete(partition);
    if (this.#crashed && this.#failing.size === 0) this.#recovered('a batch went through');
  }

  #recovered(how: string): void {
    this.#crashed = false;
    this.#failing.clear();
    this.#bus.logger?.info({ groupId: this.#options.groupId, topic: this.#topic, how }, 'consumer recovered');
  }

  #scheduleRestart(): void {
    const delay = this.#restartDelay;
    this.#restartDelay = Math.min(this.#restartDelay * 2, restartBackoffMs.max);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = null;
      const consumer = this.#consumer;
      if (consumer === null || this.#stopping) return;
      consumer
        .connect()
        .then(() => consumer.run(this.#runConfig()))
        .catch((error: unknown) => {
          const level = isConnectionFailure(error) ? 'debug' : 'error';
          this.#bus.logger?.[level](
            { err: error, groupId: this.#options.groupId },
            'consumer restart failed',
          );
          if (!this.#stopping) this.#scheduleRestart();
        });
    }, delay);
  }

  async #eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const isStale = () => payload.isStale();
    const context: BatchContext = {
      partition: batch.partition,
      heartbeat: () => payload.heartbeat(),
      isRunning: () => payload.isRunning(),
      isStale,
    };
    const { role } = this.#options;
    const { valid, dead } = await decodeBatch(role, batch, this.#bus.registry, this.#bus.maxEventBytes);
    const last = batch.messages.at(-1);
    if (last === undefined || isStale()) return;
    if (valid.length > 0) {
      // Decoding a large batch may have taken a while: tell the group before the service's turn.
      await payload.heartbeat();
      await this.#options.onBatch(valid, context);
    }
    // After the service is done with the batch and before the commit: a throwing onBatch redelivers
    // the batch without having dead-lettered its bad records twice.
    await deadLetter(this.#bus, role, dead, {
      ...(this.#options.publishDeadLetters === undefined
        ? {}
        : { publish: this.#options.publishDeadLetters }),
      onDeadLetter: (record, reason, message) => this.#options.onDeadLetter?.(record, reason, message),
    });
    payload.resolveOffset(last.offset);
    await payload.commitOffsetsIfNecessary({
      topics: [
        {
          topic: batch.topic,
          partitions: [{ partition: batch.partition, offset: String(Number(last.offset) + 1) }],
        },
      ],
    });
    await payload.heartbeat();
    // A batch went through: a later crash is a new problem, restarted without the earlier backoff.
    this.#restartDelay = restartBackoffMs.initial;
    this.#batchDone(batch.partition);
  }

  ready(): boolean {
    return this.#joined && !this.#crashed && !this.#stopping;
  }

  async lag(): Promise<number> {
    return groupLag(
      await this.#bus.admin(),
      this.#options.groupId,
      this.#topic,
      this.#options.fromBeginning ?? true,
    );
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#restartTimer !== null) clearTimeout(this.#restartTimer);
    this.#restartTimer = null;
    const consumer = this.#consumer;
    if (consumer !== null) await consumer.disconnect();
    this.#joined = false;
    this.#onStopped();
  }
}
