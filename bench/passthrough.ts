import type { Kafka, Producer } from 'kafkajs';
import { microsPerTurn, sampleCpu, type Watched } from './cpu.js';
import type { LegResult } from './report.js';
import { offer, type Message } from './workload.js';

/**
 * A bare kafkajs passthrough of the L0 records: an idempotent producer (acks -1, one send in flight)
 * sending batches of 500, and one `eachBatch` consumer that joins before the first send, on a topic of
 * its own (removed afterwards). The rate is messages per second from the first send to the last message
 * consumed; the CPU is sampled at the same two moments.
 */
export async function passthrough(
  kafka: Kafka,
  messages: readonly Message[],
  options: { topic: string; partitions: number; watched: readonly Watched[]; rate?: number },
): Promise<LegResult> {
  const { topic } = options;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: options.partitions, replicationFactor: 1 }],
  });
  const consumer = kafka.consumer({ groupId: `${topic}-group` });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  try {
    await Promise.all([consumer.connect(), producer.connect()]);
    await consumer.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    let consumed = 0;
    let last = 0;
    let allConsumed = () => undefined as void;
    const done = new Promise<void>((resolve) => (allConsumed = resolve));
    await consumer.run({
      eachBatch: ({ batch }) => {
        consumed += batch.messages.length;
        if (consumed >= messages.length && last === 0) {
          last = performance.now();
          allConsumed();
        }
        return Promise.resolve();
      },
    });
    await joined;
    const before = sampleCpu(options.watched);
    const first = performance.now();
    await sendInOrder(producer, topic, messages, options.rate);
    await done;
    const after = sampleCpu(options.watched);
    return {
      turnsPerSecond: (messages.length / (last - first)) * 1000,
      cpu: microsPerTurn(before, after, messages.length),
    };
  } finally {
    await Promise.all([consumer.disconnect(), producer.disconnect()]);
    await admin.deleteTopics({ topics: [topic], timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
  }
}

/**
 * Sends the records in chunks of 500 (paced at `rate` records/s if given), acks -1, one send at a time
 * like the publisher: a session's records cannot overtake each other.
 */
export async function sendInOrder(
  producer: Producer,
  topic: string,
  messages: readonly Message[],
  rate = 0,
): Promise<void> {
  let sending: Promise<unknown> = Promise.resolve();
  await offer(
    messages.length,
    (from, to) => {
      sending = sending.then(() => producer.send({ topic, acks: -1, messages: messages.slice(from, to) }));
      return sending;
    },
    { rate },
  );
}
