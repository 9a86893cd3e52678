import type { Redis } from 'ioredis';
import type { Bus } from '../libs/contract/src/index.js';

// The same shape as Tidemark with none of its logic (issue 25's yardstick): kafkajs and ioredis doing
// the pipeline's topology on the bench's own L0 records — what the design's I/O costs by itself, so that
// Tidemark's cost can be read as a ratio to it ("what does our logic cost over the I/O it needs").
//
//   materializer-shaped group on L0:     one Redis pipeline per batch, a projection entry per turn
//   compactor-shaped group on L0:        one Redis pipeline per batch, window state per turn; a
//                                        compaction-sized record per 40 turns of a session, and one more
//                                        per 4 of those (the digest)
//   validator-shaped group on compactions: one pipeline per batch reading each node's window; one
//                                        decision-sized record per compaction, two for a digest
//   resume-shaped group on markers:      one pipeline per batch storing the decisions
//
// Same partitions, same concurrency as the services; everything in this process. Turns are counted per
// record key (the session), not decoded: decoding and deciding are Tidemark's logic.

type Kafka = Bus['kafka'];
type Producer = ReturnType<Kafka['producer']>;

export interface ShapeMessage {
  readonly key: string;
  readonly value: Buffer;
}

export interface ShapeRun {
  readonly kafka: Kafka;
  readonly redis: Redis;
  /** Topic, group and Redis key prefix of this run; everything under it is removed afterwards. */
  readonly prefix: string;
  readonly partitions: number;
  readonly messages: readonly ShapeMessage[];
  /** Sends the messages in [from, to), paced as the other legs are. */
  readonly offer: (count: number, send: (from: number, to: number) => Promise<unknown>) => Promise<void>;
}

const compactionBytes = 3_700;
const decisionBytes = 390;
const turnsPerL1 = 40;
const l1PerDigest = 4;

/** Records per second from the first L0 send to the last decision stored. */
export async function sameShape(run: ShapeRun): Promise<number> {
  const { kafka, redis, prefix, partitions, messages } = run;
  const topics = {
    l0: `${prefix}shape.l0`,
    compactions: `${prefix}shape.compactions`,
    markers: `${prefix}shape.markers`,
  };
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: Object.values(topics).map((topic) => ({
      topic,
      numPartitions: partitions,
      replicationFactor: 1,
    })),
  });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const compaction = Buffer.alloc(compactionBytes, 'c');
  const decision = Buffer.alloc(decisionBytes, 'd');
  const l1s = new Map<string, number>();
  const turnCounts = new Map<string, number>();
  let expectedDecisions = 0;
  for (const { key } of messages) {
    const count = (turnCounts.get(key) ?? 0) + 1;
    turnCounts.set(key, count);
    if (count % turnsPerL1 === 0) {
      const l1 = (l1s.get(key) ?? 0) + 1;
      l1s.set(key, l1);
      expectedDecisions += l1 % l1PerDigest === 0 ? 3 : 1;
    }
  }
  turnCounts.clear();
  l1s.clear();

  let decided = 0;
  let finished = () => undefined as void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const consumers: ReturnType<Kafka['consumer']>[] = [];
  const group = async (
    name: string,
    topic: string,
    onBatch: (
      batch: readonly { key: string; value: Buffer; offset: string }[],
      send: Producer,
    ) => Promise<void>,
  ) => {
    const consumer = kafka.consumer({ groupId: `${prefix}shape-${name}`, maxWaitTimeInMs: 100 });
    consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    await consumer.run({
      partitionsConsumedConcurrently: partitions,
      eachBatch: async ({ batch }) => {
        const records = batch.messages.map((m) => ({
          key: m.key?.toString() ?? '',
          value: m.value ?? Buffer.alloc(0),
          offset: m.offset,
        }));
        await onBatch(records, producer);
      },
    });
    await joined;
  };

  try {
    await group('materializer', topics.l0, async (records) => {
      const pipeline = redis.pipeline();
      for (const r of records) {
        pipeline.hset(`${prefix}m:{${r.key}}`, r.offset, r.value.length);
        pipeline.hset(`${prefix}m:{${r.key}}:meta`, 'applied', r.offset);
      }
      await pipeline.exec();
    });
    await group('compactor', topics.l0, async (records, send) => {
      const pipeline = redis.pipeline();
      const out: { key: string; value: Buffer }[] = [];
      for (const r of records) {
        pipeline.hset(`${prefix}c:{${r.key}}:turns`, r.offset, r.value);
        const count = (turnCounts.get(r.key) ?? 0) + 1;
        turnCounts.set(r.key, count);
        if (count % turnsPerL1 === 0) {
          const l1 = (l1s.get(r.key) ?? 0) + 1;
          l1s.set(r.key, l1);
          out.push({ key: r.key, value: compaction });
          if (l1 % l1PerDigest === 0) out.push({ key: r.key, value: compaction });
        }
        pipeline.set(`${prefix}c:{${r.key}}:win`, String(count));
      }
      if (out.length > 0) await send.send({ topic: topics.compactions, acks: -1, messages: out });
      await pipeline.exec();
    });
    const nodes = new Map<string, number>();
    await group('validator', topics.compactions, async (records, send) => {
      const pipeline = redis.pipeline();
      for (const r of records) pipeline.get(`${prefix}c:{${r.key}}:win`);
      await pipeline.exec();
      // One decision per compaction; a digest (a session's every fifth: four L1s, then it) gets two.
      const out = records.flatMap((r) => {
        const n = (nodes.get(r.key) ?? 0) + 1;
        nodes.set(r.key, n);
        return Array.from({ length: n % (l1PerDigest + 1) === 0 ? 2 : 1 }, () => ({
          key: r.key,
          value: decision,
        }));
      });
      await send.send({ topic: topics.markers, acks: -1, messages: out });
    });
    await group('resume', topics.markers, async (records) => {
      const pipeline = redis.pipeline();
      for (const r of records) pipeline.hset(`${prefix}r:{${r.key}}`, r.offset, r.value);
      await pipeline.exec();
      decided += records.length;
      if (decided >= expectedDecisions) finished();
    });

    const first = performance.now();
    let sending: Promise<unknown> = Promise.resolve();
    await run.offer(messages.length, (from, to) => {
      sending = sending.then(() =>
        producer.send({ topic: topics.l0, acks: -1, messages: messages.slice(from, to) }),
      );
      return sending;
    });
    await done;
    return (messages.length / (performance.now() - first)) * 1000;
  } finally {
    await Promise.all(consumers.map((c) => c.disconnect()));
    await producer.disconnect();
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
    await admin
      .deleteGroups(['materializer', 'compactor', 'validator', 'resume'].map((n) => `${prefix}shape-${n}`))
      .catch(() => undefined);
    await admin.disconnect();
    await removeKeys(redis, prefix);
  }
}

async function removeKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}
