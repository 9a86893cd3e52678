import { describe, expect, it, onTestFinished } from 'vitest';
import { connectBus, isolatedTopics } from './helpers.js';
import { faultListenerUp, startKafkaProxy } from './tcp-proxy.js';

// A link that fails in the middle of a response (a middlebox or a flapping network resets it after the
// first bytes of a Fetch or Metadata response came through). kafkajs reconnects the same connection, and
// kafkajs 2.2.4 kept the bytes of the cut response buffered: every response on the new socket was read
// after them, misframed, and the connection never answered again. A consumer so wedged stopped consuming
// for minutes, its log showing only request timeouts (test/e2e/network-faults.test.ts met it after its
// dropped connections). The bus clears that buffer on every new socket (kafka-internals.ts).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a connection reset in the middle of a response', () => {
  it('answers again on the reconnected connection within seconds', { timeout: 60_000 }, async () => {
    if (!(await faultListenerUp())) {
      throw new Error(
        'no fault-test listener (127.0.0.1:19094): it comes with the local stack (infra/README.md); this test needs it',
      );
    }
    const topics = await isolatedTopics(1);
    const proxy = await startKafkaProxy();
    onTestFinished(() => proxy.close());
    const bus = await connectBus(topics, { brokers: proxy.brokers });
    const admin = await bus.admin();
    await admin.fetchTopicMetadata({ topics: [topics.turns] });

    const cut = proxy.cutMidResponse();
    const during = admin.fetchTopicMetadata({ topics: [topics.turns] }).catch(() => undefined);
    await cut;
    await during;

    // kafkajs's request timeout is 30 s: a wedged connection times out each request, and never answers.
    const answered = await Promise.race([
      admin.fetchTopicMetadata({ topics: [topics.turns] }).then(() => true),
      sleep(10_000).then(() => false),
    ]);
    expect(answered).toBe(true);
  });
});
