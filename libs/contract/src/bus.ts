import type { DeadLetter, DeadLetterReason } from '@tidemark/core';
import {
  Kafka,
  logLevel,
  Partitioners,
  type Admin,
  type Consumer,
  type ConsumerRunConfig,
  type EachBatchPayload,
  type LogEntry,
  type logCreator,
  type Message,
  type Producer,
} from 'kafkajs';
import type { Logger } from 'pino';
import { encodeBody, frame, recordOf } from './codec.js';
import { decodeRecord, type DecodedRecord, type RawRecord } from './decode.js';
import { ContractError } from './errors.js';
import { internalCluster, type InternalCluster } from './kafka-internals.js';
import { kafkaLogLevel, pinoLogCreator } from './logging.js';
import { Registry } from './registry.js';
import { recordsByRole, topicRoles, type EventsByRole, type TopicNames, type TopicRole } from './topics.js';
import { expectedKey, validateEvent } from './validate.js';

// The Kafka bus every service uses: one idempotent producer per Bus, and batch consumers that decode and
// validate every record, dead-letter what they cannot use (with the original bytes and a reason code)
// and hand the rest to the service in offset order, committing a batch only once the service is done
// with it. kafkajs stays behind this module so a successor client can replace it in one place.

// Our partitioner is chosen explicitly (the default: murmur2 over the key, as the Java client), so the
// kafkajs v2 warning about the changed default is noise.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

export const defaultMaxEventBytes = 1024 * 1024;
/** A dead letter keeps at most this many bytes of the original value, so it fits a broker's message bound. */
export const maxDeadLetterValueBytes = 512 * 1024;

export interface BusOptions {
  brokers: string[];
  registryUrl: string;
  clientId: string;
  topics: TopicNames;
  /** Recorded in DeadLetter.service. */
  service: string;
  /** kafkajs logs are mapped onto it. */
  logger?: Logger;
  /** A record larger than this (key + value) is dead-lettered as oversize, and refused on send. Default 1 MiB. */
  maxEventBytes?: number;
  /** Producer requests in flight per broker (≤ 5 keeps idempotent ordering). Default 1. */
  maxInFlightRequests?: number;
}

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
   * Default true. A replay or rebuild that reads a topic again may set it false: bad records are still
   * skipped (and told to onDeadLetter), without dead-lettering them a second time.
   */
  publishDeadLetters?: boolean;
  /** How long an idle fetch waits for data (default 500 ms); also bounds how long `stop()` takes. */
  maxWaitTimeInMs?: number;
  /**
   * How long the group waits for a silent member (a SIGKILLed one) before its partitions move on
   * (kafkajs default 30 s; the broker's floor is 6 s). A restarted service resumes after at most this.
   */
  sessionTimeout?: number;
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

export interface EventProducer {
  /** One batch, encoded via the registry, keyed by sessionKey. Resolves when durably written (acks -1). */
  send<R extends TopicRole>(role: R, events: readonly EventsByRole[R][]): Promise<void>;
  /** Publishes a DeadLetter for a record this service could not use. */
  deadLetter(record: RawRecord, reason: DeadLetterReason, message: string): Promise<void>;
  /** Disconnects the Bus's producer (a later `bus.producer()` connects a new one). */
  disconnect(): Promise<void>;
}

export class Bus {
  readonly kafka: Kafka;
  readonly topics: TopicNames;
  readonly registry: Registry;
  readonly service: string;
  readonly logger: Logger | undefined;
  readonly maxEventBytes: number;
  readonly #maxInFlightRequests: number;
  #producer: Promise<BusProducer> | null = null;
  #admin: Promise<Admin> | null = null;
  #cluster: Promise<InternalCluster> | null = null;
  readonly #reportedMessages: Set<string>;
  readonly #consumers = new Set<BusConsumer<TopicRole>>();
  readonly #brokers: BrokerReachability | null;

  private constructor(
    options: BusOptions,
    kafka: Kafka,
    registry: Registry,
    brokers: BrokerReachability | null,
    reportedMessages: Set<string>,
  ) {
    this.kafka = kafka;
    this.#brokers = brokers;
    this.#reportedMessages = reportedMessages;
    this.registry = registry;
    this.topics = options.topics;
    this.service = options.service;
    this.logger = options.logger;
    this.maxEventBytes = options.maxEventBytes ?? defaultMaxEventBytes;
    this.#maxInFlightRequests = options.maxInFlightRequests ?? 1;
    if (this.#maxInFlightRequests < 1 || this.#maxInFlightRequests > 5) {
      throw new RangeError('maxInFlightRequests must be 1 to 5 for the idempotent producer');
    }
  }

  /** Connects and registers every subject of every topic (idempotent). */
  static async connect(options: BusOptions): Promise<Bus> {
    if (options.service.length === 0) throw new RangeError('BusOptions.service must name the service');
    const brokers = options.logger === undefined ? null : new BrokerReachability(options.logger);
    const reportedMessages = new Set<string>();
    const kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: kafkaLogLevel(options.logger),
      ...(options.logger === undefined || brokers === null
        ? {}
        : { logCreator: outageAwareLogCreator(options.logger, brokers, reportedMessages) }),
      retry: { initialRetryTime: 100, retries: 8 },
    });
    const registry = new Registry(options.registryUrl, options.clientId);
    await Promise.all(
      topicRoles.flatMap((role) =>
        recordsByRole[role].map((record) => registry.register(options.topics[role], record)),
      ),
    );
    return new Bus(options, kafka, registry, brokers, reportedMessages);
  }

  /** The Bus's idempotent producer (acks -1), connected on first use; the same one on every call. */
  producer(): Promise<EventProducer> {
    if (this.#producer === null) {
      const client = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: this.#maxInFlightRequests,
        createPartitioner: Partitioners.DefaultPartitioner,
        allowAutoTopicCreation: false,
      });
      client.on(client.events.REQUEST, (event) => this.brokerAnswered(event.payload.broker));
      const producer = new BusProducer(this, client, () => {
        this.#producer = null;
      });
      this.#producer = producer.connect().then(
        () => producer,
        (error: unknown) => {
          this.#producer = null;
          throw error;
        },
      );
    }
    return this.#producer;
  }

  /** @internal The producer with its lower-level methods, for the publisher. */
  busProducer(): Promise<BusProducer> {
    return this.producer() as Promise<BusProducer>;
  }

  consumer<R extends TopicRole>(options: ConsumeOptions<R>): EventConsumer {
    const consumer = new BusConsumer(this, options, () => this.#consumers.delete(consumer));
    this.#consumers.add(consumer);
    return consumer;
  }

  /** A shared admin client (lag, offsets, provisioning), connected on first use; `disconnect()` closes it. */
  admin(): Promise<Admin> {
    if (this.#admin === null) {
      const admin = this.kafka.admin();
      admin.on(admin.events.REQUEST, (event) => this.brokerAnswered(event.payload.broker));
      this.#admin = admin.connect().then(
        () => admin,
        (error: unknown) => {
          this.#admin = null;
          throw error;
        },
      );
    }
    return this.#admin;
  }

  /**
   * One round trip to the cluster (a metadata request for no topics, over the shared admin client):
   * resolves when a broker answered. It waits through kafkajs's retries, so a readiness check bounds it
   * with a deadline.
   */
  async ping(): Promise<void> {
    const admin = await this.admin();
    await admin.describeCluster();
  }

  /** @internal A broker answered a request of one of this Bus's clients: an outage of it is over. */
  brokerAnswered(broker: string): void {
    this.#brokers?.answered(broker);
  }

  /** Stops every consumer it made, then disconnects the producer and the admin client. */
  async disconnect(): Promise<void> {
    await Promise.all([...this.#consumers].map((c) => c.stop()));
    const producer = this.#producer;
    const admin = this.#admin;
    const cluster = this.#cluster;
    this.#producer = null;
    this.#admin = null;
    this.#cluster = null;
    await Promise.all([
      producer?.then((p) => p.disconnect()).catch(() => undefined),
      admin?.then((a) => a.disconnect()).catch(() => undefined),
      cluster?.then((c) => c.disconnect()).catch(() => undefined),
    ]);
  }

  /**
   * Tells the log mapping that kafkajs's lines about this error (its batch error, its crash) repeat
   * what the service already reported: they are logged at debug.
   */
  reported(error: Error): void {
    this.#reportedMessages.add(error.message);
    // A handful of distinct messages at most; bounded all the same.
    if (this.#reportedMessages.size > 64)
      this.#reportedMessages.delete(this.#reportedMessages.values().next().value!);
  }

  /** Sends a LeaveGroup for `memberId` to the group's coordinator (see BusConsumer's release). */
  async leaveGroupAs(groupId: string, memberId: string): Promise<void> {
    this.#cluster ??= (async () => {
      const cluster = internalCluster(this.kafka);
      await cluster.connect();
      return cluster;
    })().catch((error: unknown) => {
      this.#cluster = null;
      throw error;
    });
    const coordinator = await (await this.#cluster).findGroupCoordinator({ groupId });
    await coordinator.leaveGroup({ groupId, memberId });
  }
}

/** An encoded message ready for a topic. */
export interface EncodedMessage {
  key: Buffer | string | null;
  value: Buffer;
}

export class BusProducer implements EventProducer {
  readonly #bus: Bus;
  readonly #producer: Producer;
  readonly #onDisconnect: () => void;

  constructor(bus: Bus, producer: Producer, onDisconnect: () => void) {
    this.#bus = bus;
    this.#producer = producer;
    this.#onDisconnect = onDisconnect;
  }

  connect(): Promise<void> {
    return this.#producer.connect();
  }

  /**
   * Validates and encodes one event of a role: a ContractError (invalid_event) names what is wrong,
   * before anything is sent.
   */
  async encode<R extends TopicRole>(role: R, event: EventsByRole[R]): Promise<EncodedMessage> {
    const record = recordOf(role, event);
    const id = await this.#bus.registry.idFor(this.#bus.topics[role], record);
    return this.encodeWith(id, role, event);
  }

  /** `encode` with the schema id already known: synchronous, so a caller can order its checks. */
  encodeWith<R extends TopicRole>(schemaId: number, role: R, event: EventsByRole[R]): EncodedMessage {
    const validation = validateEvent(role, event);
    if (!validation.ok) {
      throw new ContractError(
        'invalid_event',
        `refusing to send a ${role} event: ${validation.reason}: ${validation.message}`,
      );
    }
    const record = recordOf(role, event);
    const value = frame(schemaId, encodeBody(record, event));
    const key = role === 'deadletter' ? deadLetterKey(event as DeadLetter) : expectedKey(role, event);
    const size = value.length + (key === null ? 0 : Buffer.byteLength(key));
    if (size > boundFor(role, this.#bus.maxEventBytes)) {
      throw new ContractError(
        'invalid_event',
        `refusing to send a ${record} of ${size} bytes, over the bound of ${this.#bus.maxEventBytes}`,
      );
    }
    return { key, value };
  }

  /** Sends encoded messages to a role's topic in one request per partition; resolves when durable. */
  async sendEncoded(role: TopicRole, messages: readonly EncodedMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.#producer.send({ topic: this.#bus.topics[role], acks: -1, messages: messages as Message[] });
  }

  async send<R extends TopicRole>(role: R, events: readonly EventsByRole[R][]): Promise<void> {
    const messages: EncodedMessage[] = [];
    for (const event of events) messages.push(await this.encode(role, event));
    await this.sendEncoded(role, messages);
  }

  async deadLetter(record: RawRecord, reason: DeadLetterReason, message: string): Promise<void> {
    await this.send('deadletter', [deadLetterOf(record, reason, message, this.#bus.service)]);
  }

  async disconnect(): Promise<void> {
    this.#onDisconnect();
    await this.#producer.disconnect();
  }
}

function deadLetterKey(deadLetter: DeadLetter): Buffer | null {
  return deadLetter.key === null
    ? null
    : Buffer.from(deadLetter.key.buffer, deadLetter.key.byteOffset, deadLetter.key.byteLength);
}

/** The DeadLetter for a record: its original bytes (a huge value truncated), where it was, and why. */
export function deadLetterOf(
  record: RawRecord,
  reason: DeadLetterReason,
  message: string,
  service: string,
): DeadLetter {
  const value = record.value;
  const truncated = value !== null && value.length > maxDeadLetterValueBytes;
  return {
    originalTopic: record.topic,
    partition: record.partition,
    offset: record.offset,
    key: record.key === null ? null : new Uint8Array(record.key),
    value:
      value === null ? null : new Uint8Array(truncated ? value.subarray(0, maxDeadLetterValueBytes) : value),
    reason,
    message: truncated
      ? `${message} (value truncated to its first ${maxDeadLetterValueBytes} of ${value.length} bytes; the record stays at its offset)`
      : message,
    service,
    observedAt: Date.now(),
  };
}

/**
 * The size bound of a role's records. A dead letter carries the original record (up to
 * maxDeadLetterValueBytes of it), which may itself have been oversize: its bound is large enough for
 * that, so dead-lettering an oversize record can never fail for its size.
 */
function boundFor(role: TopicRole, maxEventBytes: number): number {
  return role === 'deadletter' ? Math.max(maxEventBytes, maxDeadLetterValueBytes + 64 * 1024) : maxEventBytes;
}

const restartBackoffMs = { initial: 250, max: 30_000 };
/** While crashed and rejoined, how often (at most) the consumer asks for its lag to see if it is caught up. */
const caughtUpProbeMs = 1_000;

/** How long a crashed member's leave is retried while the broker is away (see BusConsumer's release). */
const releaseGiveUpMs = 10 * 60_000;

class BusConsumer<R extends TopicRole> implements EventConsumer {
  readonly #bus: Bus;
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

  constructor(bus: Bus, options: ConsumeOptions<R>, onStopped: () => void) {
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
      if (abandoned !== null) void this.#release(abandoned);
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
          if (error instanceof Error && (isReported(error) || this.#options.reportedBy?.(error) === true)) {
            this.#bus.reported(markReported(error));
          }
          throw error;
        }
      },
    };
  }

  /**
   * Leaves the group as the member a crash abandoned. kafkajs leaves on a crash, but not when the crash
   * was the broker's absence (the LeaveGroup cannot reach it), and it rejoins as a new member: the
   * coordinator then holds the rebalance until the old member's session times out (CONSUMER_SESSION_
   * TIMEOUT_MS, 30 s by default), and nothing is consumed meanwhile. So the old member leaves as soon as
   * the coordinator answers again, however long the broker was away: a restarted broker starts every old
   * member's session anew when it loads the group, so the session's own expiry is no bound. It stops once
   * the leave is answered (or the member is unknown: gone already), once this consumer joined again, when
   * the consumer stops, or after an outage far longer than any session (releaseGiveUpMs).
   */
  async #release(memberId: string): Promise<void> {
    const { groupId } = this.#options;
    const started = Date.now();
    while (!this.#stopping && !this.#joined && Date.now() - started < releaseGiveUpMs) {
      try {
        await this.#bus.leaveGroupAs(groupId, memberId);
        this.#bus.logger?.info(
          { groupId, memberId, ms: Date.now() - started },
          'left the group as the crashed member: the group rebalances without waiting out its session',
        );
        return;
      } catch (error) {
        if ((error as { type?: string }).type === 'UNKNOWN_MEMBER_ID') return;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
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
    const valid: DecodedRecord<EventsByRole[R]>[] = [];
    const dead: { record: RawRecord; reason: DeadLetterReason; message: string }[] = [];
    const lookup = (id: number) => this.#bus.registry.writer(id);
    for (const message of batch.messages) {
      const raw: RawRecord = {
        topic: batch.topic,
        partition: batch.partition,
        offset: Number(message.offset),
        key: message.key ?? null,
        value: message.value ?? null,
        timestamp: Number(message.timestamp),
      };
      // Throws only when the registry cannot be reached: the batch is then retried, not dead-lettered.
      const outcome = await decodeRecord(role, raw, lookup, boundFor(role, this.#bus.maxEventBytes));
      if (outcome.ok) valid.push({ raw, value: outcome.value });
      else dead.push({ record: raw, reason: outcome.reason, message: outcome.message });
    }
    const last = batch.messages.at(-1);
    if (last === undefined || isStale()) return;
    if (valid.length > 0) {
      // Decoding a large batch may have taken a while: tell the group before the service's turn.
      await payload.heartbeat();
      await this.#options.onBatch(valid, context);
    }
    if (dead.length > 0 && (this.#options.publishDeadLetters ?? true)) {
      // After the service is done with the batch and before the commit: a throwing onBatch redelivers
      // the batch without having dead-lettered its bad records twice.
      const producer = await this.#bus.busProducer();
      const messages = [];
      for (const d of dead)
        messages.push(
          await producer.encode('deadletter', deadLetterOf(d.record, d.reason, d.message, this.#bus.service)),
        );
      await producer.sendEncoded('deadletter', messages);
    }
    for (const d of dead) {
      this.#bus.logger?.warn(
        { topic: d.record.topic, partition: d.record.partition, offset: d.record.offset, reason: d.reason },
        `dead-lettered: ${d.message}`,
      );
      this.#options.onDeadLetter?.(d.record, d.reason, d.message);
    }
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
    const admin = await this.#bus.admin();
    const [ends, committed] = await Promise.all([
      admin.fetchTopicOffsets(this.#topic),
      admin.fetchOffsets({ groupId: this.#options.groupId, topics: [this.#topic] }),
    ]);
    const done = new Map<number, number>();
    for (const topic of committed) for (const p of topic.partitions) done.set(p.partition, Number(p.offset));
    let lag = 0;
    for (const p of ends) {
      const high = Number(p.high);
      const low = Number(p.low);
      const at = done.get(p.partition) ?? -1;
      // Nothing committed yet: a group from the beginning has everything ahead of it.
      const from = at >= 0 ? at : (this.#options.fromBeginning ?? true) ? low : high;
      lag += Math.max(0, high - from);
    }
    return lag;
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

/**
 * How kafkajs words a broker it cannot reach: a connection refused, reset or timed out ("Connection
 * error: connect ECONNREFUSED …", "Connection timeout"), closed under a request, a request that timed
 * out (a frozen broker), no broker left to try. Retry and crash lines quote their cause's words. Only
 * kafkajs's own wording: an application error that mentions a refused connection (Redis's, say) is not
 * the broker's.
 */
const connectionFailurePattern =
  /Connection error|Connection timeout|Closed connection|Request .+ timed out|Failed to connect|No broker available|KafkaJS(Connection|ConnectionClosed|RequestTimeout|NoBrokerAvailable)Error/;

const connectionFailureNames = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSNoBrokerAvailableError',
]);

/** True when an error, or one of its causes (a retry gives up with the last one), is a broker not answering. */
const reportedMark = Symbol.for('tidemark.reported');

/**
 * Marks an error a batch throws as one the service has already told of in its own words (say, "state
 * lost: rebuilding"): the bus and kafkajs then log their lines about it at debug, not as errors with a
 * stack each. The batch is redelivered as for any error.
 */
export function markReported<E extends Error>(error: E): E {
  Object.defineProperty(error, reportedMark, { value: true });
  return error;
}

function isReported(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if ((e as unknown as Record<symbol, unknown>)[reportedMark] === true) return true;
  }
  return false;
}

function isConnectionFailure(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (connectionFailureNames.has(e.name)) return true;
  }
  return false;
}

/**
 * Whether each broker answers, told once per outage: one warn when a broker stops answering, one info
 * when it answers again, with how long it was away (`downMs`). kafkajs tells of failures only in its
 * log lines (which carry the broker's address) and of answers in its request events; both are fed here.
 */
class BrokerReachability {
  readonly #logger: Logger;
  readonly #down = new Map<string, { since: number; failures: number }>();

  constructor(logger: Logger) {
    this.#logger = logger.child({ component: 'kafka' });
  }

  get anyDown(): boolean {
    return this.#down.size > 0;
  }

  failed(broker: string, reason: string): void {
    const outage = this.#down.get(broker);
    if (outage !== undefined) {
      outage.failures += 1;
      return;
    }
    this.#down.set(broker, { since: Date.now(), failures: 1 });
    this.#logger.warn({ broker, reason }, 'kafka broker unreachable');
  }

  answered(broker: string): void {
    if (this.#down.size === 0) return;
    const outage = this.#down.get(broker);
    if (outage === undefined) return;
    this.#down.delete(broker);
    this.#logger.info(
      { broker, downMs: Date.now() - outage.since, failures: outage.failures },
      'kafka broker reachable again',
    );
  }
}

/**
 * kafkajs's log lines onto pino (`pinoLogCreator`), except that a broker outage is one story instead of
 * an error line per connection attempt and retry (two per attempt, from the connection and the broker
 * pool): a line saying a broker cannot be reached goes to debug and feeds `brokers` (which warns once),
 * and so does any retry line while a broker is away.
 */
function outageAwareLogCreator(
  logger: Logger,
  brokers: BrokerReachability,
  reportedMessages: ReadonlySet<string>,
): logCreator {
  const write = pinoLogCreator(logger)(logLevel.DEBUG);
  return () => (entry: LogEntry) => {
    if (entry.level !== logLevel.ERROR && entry.level !== logLevel.WARN) return write(entry);
    const { message, broker, error, retryCount, retryTime } = entry.log as {
      message: string;
      broker?: unknown;
      error?: unknown;
      retryCount?: unknown;
      retryTime?: unknown;
    };
    const text = typeof error === 'string' ? `${message} ${error}` : message;
    if (connectionFailurePattern.test(text)) {
      // Only the connection's own line names the broker; the broker pool's twin line does not.
      if (entry.namespace === 'Connection' && typeof broker === 'string') brokers.failed(broker, text);
      return write({ ...entry, level: logLevel.DEBUG });
    }
    if (brokers.anyDown && (retryCount !== undefined || retryTime !== undefined)) {
      return write({ ...entry, level: logLevel.DEBUG });
    }
    // kafkajs's own lines about an error the service already reported (its batch error, its crash).
    if (
      (error instanceof Error && isReported(error)) ||
      [...reportedMessages].some((m) => text.includes(m))
    ) {
      return write({ ...entry, level: logLevel.DEBUG });
    }
    write(entry);
  };
}
