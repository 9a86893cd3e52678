import type { TurnEvent } from '@tidemark/core';
import type { Kafka } from 'kafkajs';
import { decodeRecord } from './decode.js';
import { internalCluster } from './kafka-internals.js';
import type { Registry } from './registry.js';

// Reads one session's raw turns from turns.l0 by offset (the resume service's raw checkpoints, the
// materializer's parked turns): fetch the session's partition at the first needed offset and read
// forward until the last, keeping the session's records (by key). No consumer group is joined (joining costs a rebalance, hundreds of milliseconds, per read): the reader
// sends Fetch requests straight to the partition leader, over the connection pool of a kafkajs cluster.
// kafkajs has no public API for that (its consumer only reads through a group), so the reader reaches
// its cluster through the client's private factory (kafka-internals.ts).

/** The part of kafkajs's internal Cluster and Broker the reader uses. */
export interface L0Message {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** The record's timestamp (epoch ms as a string): its append time (CreateTime or LogAppendTime). */
  readonly timestamp?: string;
  readonly isControlRecord?: boolean;
}
interface FetchPartition {
  readonly partition: number;
  readonly highWatermark: string;
  readonly messages: readonly L0Message[];
}
interface Broker {
  fetch(request: {
    replicaId: number;
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: FetchPartition[] }[] }>;
}
interface Cluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadata(): Promise<void>;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(options: { nodeId: string }): Promise<Broker>;
}

export interface L0Span {
  readonly topic: string;
  readonly partition: number;
  /** Where to start reading: at or before the first wanted turn. */
  readonly fromOffset: number;
  /** The offset of the last wanted turn (inclusive). */
  readonly toOffset: number;
  /** The session's record key (`tenant/session`): other sessions' records in between are skipped. */
  readonly key: string;
  /** The seqs wanted, inclusive; records outside (and repeats of a seq) are skipped. */
  readonly fromSeq: number;
  readonly toSeq: number;
}

export interface L0Record {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

export interface L0ReaderOptions {
  readonly kafka: Kafka;
  /** Decodes a turns.l0 record (registry framing included); null for one that is not a valid turn. */
  readonly decode: (record: L0Record) => Promise<TurnEvent | null>;
  /** Bytes per fetch at most (default 4 MiB): a 1,000-turn span of ~1 KiB turns is one fetch. */
  readonly fetchBytes?: number;
  /** Told the records of every fetch: kafkajs decodes each one, wanted or not (a read's amplification). */
  readonly onFetch?: (records: number) => void;
}

/** The smallest fetch asked for: a few records of any size, in one round trip. */
const minFetchBytes = 16 * 1024;
/** A record's bytes assumed before a topic's first fetch says (a SessionHistory reads several topics). */
const firstRecordBytes = 1024;
/** A record's bytes on the wire beyond its key and value (length, varints, timestamp and offset deltas). */
const recordOverheadBytes = 16;

/**
 * The decoding every consumer applies to a turns.l0 record (registry framing, schema resolution,
 * validation, size bound): a record the materializer dead-lettered is not a turn here either.
 */
export function turnDecoder(
  registry: Registry,
  maxEventBytes: number,
): (record: L0Record) => Promise<TurnEvent | null> {
  return async (record) => {
    const outcome = await decodeRecord('turns', { ...record }, (id) => registry.writer(id), maxEventBytes);
    return outcome.ok ? outcome.value : null;
  };
}

const READ_COMMITTED = 1;
const NOT_LEADER_TYPES = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'NOT_LEADER_FOR_PARTITION']);

/** The Kafka protocol error type of a kafkajs error, or of the error it wraps (`cause`); '' if none. */
function protocolErrorType(error: unknown): string {
  for (let at: unknown = error; typeof at === 'object' && at !== null;) {
    const { type, cause } = at as { type?: unknown; cause?: unknown };
    if (typeof type === 'string') return type;
    if (cause === at) break;
    at = cause;
  }
  return '';
}

export class L0Reader {
  readonly #kafka: Kafka;
  readonly #decode: (record: L0Record) => Promise<TurnEvent | null>;
  readonly #fetchBytes: number;
  #cluster: Promise<Cluster> | null = null;
  readonly #topics = new Set<string>();
  /** Per topic, the mean bytes of a record of its last fetch: how much a span of offsets is asked for. */
  readonly #recordBytes = new Map<string, number>();
  readonly #onFetch: ((records: number) => void) | undefined;

  constructor(options: L0ReaderOptions) {
    this.#kafka = options.kafka;
    this.#decode = options.decode;
    this.#fetchBytes = options.fetchBytes ?? 4 * 1024 * 1024;
    this.#onFetch = options.onFetch;
  }

  #connect(): Promise<Cluster> {
    this.#cluster ??= (async () => {
      const cluster = internalCluster<Cluster>(this.#kafka, { isolationLevel: READ_COMMITTED });
      await cluster.connect();
      return cluster;
    })().catch((error: unknown) => {
      this.#cluster = null;
      throw error;
    });
    return this.#cluster;
  }

  async #leader(cluster: Cluster, topic: string, partition: number, refresh: boolean): Promise<Broker> {
    if (!this.#topics.has(topic)) {
      await cluster.addTargetTopic(topic);
      this.#topics.add(topic);
    } else if (refresh) {
      await cluster.refreshMetadata();
    }
    const leaders = cluster.findLeaderForPartitions(topic, [partition]);
    const nodeId = Object.keys(leaders)[0];
    if (nodeId === undefined) throw new Error(`no leader for ${topic}[${partition}]`);
    return cluster.findBroker({ nodeId });
  }

  /**
   * One Fetch of a partition at an offset, straight from its leader: the records at or after the
   * offset (a fetch answers from the start of the record batch holding it), control records included.
   * Empty at the end of the partition. The bare cost the benchmark compares a raw resume with.
   * `upTo`, the last offset the caller wants: the fetch asks for about that many records' bytes, not
   * the reader's bound. kafkajs decodes every record a fetch returns, so a resume reading the last few
   * turns of a busy partition would otherwise decode megabytes of other sessions' turns after them.
   */
  async fetchAt(topic: string, partition: number, offset: number, upTo?: number): Promise<L0Message[]> {
    const maxBytes = this.#bytesFor(topic, upTo === undefined ? Infinity : upTo - offset + 1);
    const cluster = await this.#connect();
    for (let refresh = false; ; refresh = true) {
      const broker = await this.#leader(cluster, topic, partition, refresh);
      let response: Awaited<ReturnType<Broker['fetch']>>;
      try {
        response = await broker.fetch({
          replicaId: -1,
          isolationLevel: READ_COMMITTED,
          maxWaitTime: 0,
          minBytes: 1,
          maxBytes,
          topics: [{ topic, partitions: [{ partition, fetchOffset: String(offset), maxBytes }] }],
        });
      } catch (error) {
        // kafkajs throws a partition's error code as an error of that type (maybe wrapped). Out of range:
        // past the end, or before a log start retention moved: nothing there. A moved leader: refresh
        // the metadata once and ask the new one.
        const type = protocolErrorType(error);
        if (type === 'OFFSET_OUT_OF_RANGE') return [];
        if (NOT_LEADER_TYPES.has(type) && !refresh) continue;
        throw error;
      }
      const data = response.responses[0]?.partitions[0];
      if (data === undefined) throw new Error(`no fetch response for ${topic}[${partition}]`);
      this.#observe(topic, data.messages);
      return data.messages.filter((message) => Number(message.offset) >= offset);
    }
  }

  /**
   * The bytes to ask for `records` offsets: a quarter over the topic's last mean record, within the reader's
   * bounds. Asking too little costs another round trip (a fetch returns at least the first record batch
   * whole, so a read always moves on); too much, decoding records nobody wanted.
   */
  #bytesFor(topic: string, records: number): number {
    const wanted = Math.ceil(records * (this.#recordBytes.get(topic) ?? firstRecordBytes) * 1.25);
    return Math.min(this.#fetchBytes, Math.max(minFetchBytes, wanted));
  }

  #observe(topic: string, messages: readonly L0Message[]): void {
    this.#onFetch?.(messages.length);
    if (messages.length === 0) return;
    let bytes = 0;
    for (const message of messages) {
      bytes += (message.key?.length ?? 0) + (message.value?.length ?? 0) + recordOverheadBytes;
    }
    this.#recordBytes.set(topic, bytes / messages.length);
  }

  /**
   * The timestamp of the record at an offset (epoch ms), when it is there and carries the session's key:
   * when that turn was appended to turns.l0. One Fetch. Null when there is no such record or no time.
   */
  async appendTime(at: {
    topic: string;
    partition: number;
    offset: number;
    key: string;
  }): Promise<number | null> {
    const messages = await this.fetchAt(at.topic, at.partition, at.offset, at.offset);
    const message = messages.find((m) => Number(m.offset) === at.offset);
    if (message === undefined || message.isControlRecord === true) return null;
    if (message.key?.toString('utf8') !== at.key) return null;
    const timestamp = Number(message.timestamp);
    return Number.isSafeInteger(timestamp) && timestamp >= 0 ? timestamp : null;
  }

  /**
   * One session's records (by key) of a partition from `fromOffset` to `toOffset` (inclusive), in offset
   * order, read forward a Fetch at a time; stops early at the end of the partition. Control records
   * (transaction markers) and other sessions' records are skipped.
   */
  async *keyedRecords(
    topic: string,
    partition: number,
    key: string,
    fromOffset: number,
    toOffset: number,
  ): AsyncGenerator<L0Record> {
    for (let offset = fromOffset; offset <= toOffset;) {
      const messages = await this.fetchAt(topic, partition, offset, toOffset);
      // Nothing at or past the offset: the end of the partition.
      if (messages.length === 0) return;
      for (const message of messages) {
        const at = Number(message.offset);
        offset = at + 1;
        if (at > toOffset) return;
        if (message.isControlRecord === true || message.key?.toString('utf8') !== key) continue;
        yield { topic, partition, offset: at, key: message.key, value: message.value };
      }
    }
  }

  /** The session's turns fromSeq..toSeq, in seq order (the first record of each seq wins). */
  async read(span: L0Span): Promise<TurnEvent[]> {
    const turns: TurnEvent[] = [];
    if (span.fromSeq > span.toSeq) return turns;
    let next = span.fromSeq;
    const records = this.keyedRecords(span.topic, span.partition, span.key, span.fromOffset, span.toOffset);
    for await (const record of records) {
      const turn = await this.#decode(record);
      // A record the materializer refused is not in the projection either: skip it like a repeat.
      if (turn === null || turn.seq !== next) continue;
      turns.push(turn);
      next += 1;
      if (next > span.toSeq) break;
    }
    return turns;
  }

  /**
   * The turns at these offsets of one partition (null where there is none, or no valid turn), in the
   * order asked. Offsets close together cost one Fetch.
   */
  async turnsAt(topic: string, partition: number, offsets: readonly number[]): Promise<(TurnEvent | null)[]> {
    const found = new Map<number, TurnEvent | null>();
    const wanted = [...new Set(offsets)].sort((a, b) => a - b);
    for (let i = 0; i < wanted.length;) {
      const messages = await this.fetchAt(topic, partition, wanted[i]!, wanted.at(-1));
      const past = messages.length === 0 ? Infinity : Number(messages.at(-1)!.offset);
      for (const message of messages) {
        const at = Number(message.offset);
        if (found.has(at) || !wanted.includes(at) || message.isControlRecord === true) continue;
        found.set(
          at,
          await this.#decode({ topic, partition, offset: at, key: message.key, value: message.value }),
        );
      }
      // On to the next offset not yet read (past the end of the partition, none is there).
      const before = i;
      while (i < wanted.length && wanted[i]! <= past) i++;
      if (i === before) i++;
    }
    return offsets.map((offset) => found.get(offset) ?? null);
  }

  async close(): Promise<void> {
    const cluster = this.#cluster;
    this.#cluster = null;
    if (cluster !== null) await (await cluster.catch(() => null))?.disconnect();
  }
}
