import { deadLetterOf, maxRequestBytes, requestsOf } from '@tidemark/contract';
import { kafkaAdmin } from '@tidemark/test-infra';
import { describe, expect, it } from 'vitest';
import { connectBus, isolatedTopics } from './helpers.js';

// A batch bigger than a broker takes in one record batch (message.max.bytes, 1 MiB by default) is sent in
// several requests, in order. Sent whole, kafkajs wrote it as one record batch per partition and the
// broker refused it for good ("larger than the max message size"): on one partition, a compactor batch of
// a backlog's L1s and digests jammed the compactor, every redelivery refused the same way.

describe('a batch larger than a broker request', () => {
  it('is sent in requests of at most maxRequestBytes, every record landing', async () => {
    const topics = await isolatedTopics(1);
    const bus = await connectBus(topics);
    const producer = await bus.producer();
    // Eight dead letters of ~400 KB each (the dead-letter topic has one partition): ~3.2 MB in one send.
    const letters = Array.from({ length: 8 }, (_, i) =>
      deadLetterOf(
        {
          topic: topics.turns,
          partition: 0,
          offset: i,
          key: Buffer.from(`k${i}`),
          value: Buffer.alloc(400_000, i),
        },
        'oversize',
        `letter ${i}`,
        'contract-test',
      ),
    );
    await producer.send('deadletter', letters);
    const admin = await kafkaAdmin();
    const [partition] = await admin.fetchTopicOffsets(topics.deadletter);
    expect(Number(partition!.high)).toBe(letters.length);
  });

  it('cuts messages into runs within the budget, in order, a message too big alone on its own', () => {
    const message = (bytes: number, key = 'k') => ({ key, value: Buffer.alloc(bytes) });
    const messages = [message(300), message(300), message(900), message(100), message(2_000), message(10)];
    const runs = requestsOf(messages, 1_000);
    expect(runs.flat()).toEqual(messages);
    expect(runs.map((run) => run.length)).toEqual([2, 1, 1, 1, 1]);
    expect(requestsOf([], 1_000)).toEqual([]);
    expect(maxRequestBytes).toBeLessThan(1024 * 1024);
  });
});
