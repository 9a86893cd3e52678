import { Kafka, Partitioners, type Admin } from 'kafkajs';
import type { Logger } from 'pino';
import { BusConsumer, type ConsumeOptions, type EventConsumer } from './consumer.js';
import { clearReceiveBufferOnConnect, internalCluster, type InternalCluster } from './kafka-internals.js';
import { kafkaLogLevel } from './logging.js';
import { BrokerReachability, outageAwareLogCreator } from './outages.js';
import { BusProducer, defaultMaxEventBytes, type EventProducer } from './producer.js';
import { Registry } from './registry.js';
import { recordsByRole, topicRoles, type TopicNames, type TopicRole } from './topics.js';

// The Kafka bus every service uses: one idempotent producer per Bus, and batch consumers that decode and
// validate every record, dead-letter what they cannot use (with the original bytes and a reason code)
// and hand the rest to the service in offset order, committing a batch only once the service is done
// with it (consumer.ts, producer.ts, outages.ts). kafkajs stays behind these modules so a successor client
// can replace it in one place.

// Our partitioner is chosen explicitly (the default: murmur2 over the key, as the Java client), so the
// kafkajs v2 warning about the changed default is noise.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

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
    // A link reset mid-response must not leave a connection that never answers again (kafka-internals.ts).
    clearReceiveBufferOnConnect();
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

  /** Sends a LeaveGroup for `memberId` to the group's coordinator (see group-leave.ts). */
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
