import type { DeadLetter, DeadLetterReason } from '@tidemark/core';
import type { Producer } from 'kafkajs';
import { encodeBody, frame, recordOf } from './codec.js';
import type { RawRecord } from './decode.js';
import { ContractError } from './errors.js';
import type { Registry } from './registry.js';
import type { EventsByRole, TopicNames, TopicRole } from './topics.js';
import { expectedKey, validateEvent } from './validate.js';

// The producing side of the bus: every event validated, encoded through the registry and keyed by its
// session, in one durable send per batch; and the dead letter of a record a consumer could not use.

export const defaultMaxEventBytes = 1024 * 1024;
/** A dead letter keeps at most this many bytes of the original value, so it fits a broker's message bound. */
const maxDeadLetterValueBytes = 512 * 1024;
/**
 * The most bytes one request carries. kafkajs writes a send's messages for a partition as one record
 * batch, and a broker refuses a batch over its `message.max.bytes` (1 MiB by default) for good: the same
 * batch redelivered is refused the same way. On one partition, a compactor batch holding a backlog's L1s
 * and digests reached several MB and jammed the compactor. A batch is sent in requests of at most this
 * many bytes, one after another, so each partition's records keep their order.
 */
export const maxRequestBytes = 512 * 1024;
/** A record's framing in a batch (length, attributes, deltas, header count), at most. */
const recordOverheadBytes = 64;

export interface EventProducer {
  /** One batch, encoded via the registry, keyed by sessionKey. Resolves when durably written (acks -1). */
  send<R extends TopicRole>(role: R, events: readonly EventsByRole[R][]): Promise<void>;
  /** Publishes a DeadLetter for a record this service could not use. */
  deadLetter(record: RawRecord, reason: DeadLetterReason, message: string): Promise<void>;
  /** Disconnects the Bus's producer (a later `bus.producer()` connects a new one). */
  disconnect(): Promise<void>;
}

/** What a producer needs of its Bus. */
export interface ProducerHost {
  readonly topics: TopicNames;
  readonly registry: Registry;
  readonly service: string;
  readonly maxEventBytes: number;
}

/** An encoded message ready for a topic. */
export interface EncodedMessage {
  key: Buffer | string | null;
  value: Buffer;
}

export class BusProducer implements EventProducer {
  readonly #bus: ProducerHost;
  readonly #producer: Producer;
  readonly #onDisconnect: () => void;

  constructor(bus: ProducerHost, producer: Producer, onDisconnect: () => void) {
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

  /**
   * Sends encoded messages to a role's topic, in requests of at most maxRequestBytes, in order; resolves
   * when all are durable.
   */
  async sendEncoded(role: TopicRole, messages: readonly EncodedMessage[]): Promise<void> {
    for (const chunk of requestsOf(messages, maxRequestBytes)) {
      await this.#producer.send({ topic: this.#bus.topics[role], acks: -1, messages: chunk });
    }
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
export function boundFor(role: TopicRole, maxEventBytes: number): number {
  return role === 'deadletter' ? Math.max(maxEventBytes, maxDeadLetterValueBytes + 64 * 1024) : maxEventBytes;
}

/** The messages in order, cut into runs of at most `budget` bytes (a message larger alone is a run alone). */
export function requestsOf(messages: readonly EncodedMessage[], budget: number): EncodedMessage[][] {
  const requests: EncodedMessage[][] = [];
  let current: EncodedMessage[] = [];
  let bytes = 0;
  for (const message of messages) {
    const size =
      message.value.length +
      (message.key === null ? 0 : Buffer.byteLength(message.key)) +
      recordOverheadBytes;
    if (current.length > 0 && bytes + size > budget) {
      requests.push(current);
      current = [];
      bytes = 0;
    }
    current.push(message);
    bytes += size;
  }
  if (current.length > 0) requests.push(current);
  return requests;
}
