import { Partitioners, type Admin, type Kafka } from 'kafkajs';
import { decodeRecord, type DecodedRecord } from './decode.js';
import { L0Reader } from './l0-reader.js';
import type { Registry } from './registry.js';
import { sessionKey, type EventsByRole, type TopicNames, type TopicRole } from './topics.js';

// One session's events of a topic, read back from the topic itself: what a service rebuilds a pruned
// session's Redis state from (bounded state: the state of a session idle past the retention expires, and
// is rebuilt from its topics the next time it is needed). Every record of a session is in one partition
// (the key's, by the producers' murmur2 partitioner), so a session's history is one partition read from
// its log start, keeping the session's records; no consumer group is joined.

/** Which part of a session's history to read: by default all of it, up to the partition's end now. */
export interface HistoryRange {
  /** The session's partition, when the caller knows it (a record of the session in hand). */
  readonly partition?: number;
  /** Where to start (a known first record of the session); default: the partition's log start. */
  readonly from?: number;
  /** Only records before this offset (exclusive); default: up to the partition's end when asked. */
  readonly before?: number;
}

export interface SessionEvents<E> {
  readonly partition: number;
  /** The session's decodable records in offset order (what could not be decoded was dead-lettered once, and is skipped). */
  readonly records: readonly DecodedRecord<E>[];
  /** Where the read stopped (exclusive): a later read `from` here sees only what came since. */
  readonly end: number;
}

/** Where the topics are and how their records decode (a Bus is one). */
export interface HistorySource {
  readonly kafka: Kafka;
  readonly topics: TopicNames;
  readonly registry: Registry;
  readonly maxEventBytes: number;
}

const defaultPartitioner = Partitioners.DefaultPartitioner();

export class SessionHistory {
  readonly #source: HistorySource;
  readonly #reader: L0Reader;
  #admin: Promise<Admin> | null = null;

  constructor(source: HistorySource) {
    this.#source = source;
    // The reader's fetches are per topic; its decoder is not used here (records are decoded by role).
    this.#reader = new L0Reader({ kafka: source.kafka, decode: () => Promise.resolve(null) });
  }

  #connectedAdmin(): Promise<Admin> {
    this.#admin ??= (async () => {
      const admin = this.#source.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((error: unknown) => {
      this.#admin = null;
      throw error;
    });
    return this.#admin;
  }

  /** The session's records of a role's topic, in offset order, up to `range.before` or the end. */
  async read<R extends TopicRole>(
    role: R,
    ref: { readonly tenantId: string; readonly sessionId: string },
    range: HistoryRange = {},
  ): Promise<SessionEvents<EventsByRole[R]>> {
    const topic = this.#source.topics[role];
    const key = sessionKey(ref.tenantId, ref.sessionId);
    const admin = await this.#connectedAdmin();
    const offsets = await admin.fetchTopicOffsets(topic);
    const partition = range.partition ?? partitionOfKey(key, offsets.length);
    const bounds = offsets.find((o) => o.partition === partition);
    if (bounds === undefined) throw new Error(`${topic} has no partition ${partition}`);
    const end = Math.min(Number(bounds.high), range.before ?? Number.MAX_SAFE_INTEGER);
    const from = Math.max(Number(bounds.low), range.from ?? 0);
    const records: DecodedRecord<EventsByRole[R]>[] = [];
    for await (const raw of this.#reader.keyedRecords(topic, partition, key, from, end - 1)) {
      const decoded = await decodeRecord(
        role,
        { ...raw },
        (id) => this.#source.registry.writer(id),
        this.#source.maxEventBytes,
      );
      if (decoded.ok) records.push({ raw, value: decoded.value });
    }
    return { partition, records, end: Math.max(from, end) };
  }

  async close(): Promise<void> {
    const admin = this.#admin;
    this.#admin = null;
    await (await admin?.catch(() => null))?.disconnect();
    await this.#reader.close();
  }
}

/** The partition of a record key among `partitions`, as every Tidemark producer places it (murmur2). */
function partitionOfKey(key: string, partitions: number): number {
  return defaultPartitioner({
    topic: '',
    partitionMetadata: Array.from({ length: partitions }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
    })),
    message: { key, value: null },
  });
}
