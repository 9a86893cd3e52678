import { describe, expect, it, onTestFinished, type TestContext } from 'vitest';
import type { TurnEvent } from '@tidemark/core';
import {
  ContractError,
  createPublisher,
  provisionTopics,
  topicNames,
  type DecodedRecord,
  type PublisherOptions,
  type TopicNames,
} from '@tidemark/contract';
import { endpoints, kafkaAdmin, uniqueName } from '@tidemark/test-infra';
import { connectBus, eventually } from './helpers.js';
import { faultListenerUp, startKafkaProxy, type KafkaProxy } from './tcp-proxy.js';
import { vectors } from './vectors.js';

// The publisher against a broker that does not answer: through a TCP proxy in front of the local stack's
// fault-test listener (tcp-proxy.ts), which refuses (a broker down or restarting) or freezes (a network
// partition: connections open, nothing answered, where a kafkajs request waits 30 s per attempt).
// A publish rejects within timeoutMs with a retriable send_timeout; republishing the same turns, once
// the broker answers again, is accepted and lands.

const timeoutMs = 2_000;
/** How late a rejection may come after timeoutMs (timers, the linger, a loaded machine). */
const marginMs = 1_000;

const template = vectors[0]!.value as TurnEvent;
const turnOf = (sessionId: string, seq: number): TurnEvent => ({
  ...template,
  sessionId,
  seq,
  turnId: `${sessionId}-${seq}`,
});
const turnsOf = (sessionId: string, from: number, to: number): TurnEvent[] =>
  Array.from({ length: to - from + 1 }, (_, i) => turnOf(sessionId, from + i));

/** The proxy, its topics and a publisher whose traffic goes through it; fails without the fault listener. */
async function setup(_context: TestContext, options: Partial<PublisherOptions> = {}) {
  if (!(await faultListenerUp())) {
    throw new Error(
      'no fault-test listener (127.0.0.1:19094): it comes with the local stack (infra/README.md); these tests need it',
    );
  }
  const prefix = `${uniqueName('t')}.`;
  const topics = topicNames(prefix);
  const admin = await kafkaAdmin();
  await provisionTopics(admin, topics, { partitions: 2 });
  onTestFinished(() =>
    admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined),
  );
  const proxy = await startKafkaProxy();
  onTestFinished(() => proxy.close());
  const publisher = await createPublisher({
    brokers: proxy.brokers,
    registryUrl: endpoints().schemaRegistryUrl,
    clientId: uniqueName('runtime'),
    topicPrefix: prefix,
    timeoutMs,
    ...options,
  });
  onTestFinished(() => publisher.close());
  return { topics, proxy, publisher };
}

/**
 * How a publish settled, and after how long, timed from before the call: the publisher starts its clock
 * inside it, and on a loaded machine the call's own synchronous work (a GC pause in it) took 24 ms once.
 */
async function timed<T>(publish: () => Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = Date.now();
  try {
    const value = await publish();
    return { ms: Date.now() - start, value };
  } catch (error) {
    return { ms: Date.now() - start, error };
  }
}

function expectTimedOut(outcome: { ms: number; error?: unknown }): void {
  expect(outcome.error).toBeInstanceOf(ContractError);
  expect(outcome.error).toMatchObject({ code: 'send_timeout', retriable: true });
  expect((outcome.error as Error).message).toMatch(
    new RegExp(`not acknowledged within ${timeoutMs} ms .*Republish the same turns \\(same seqs`),
  );
  expect(outcome.ms).toBeGreaterThanOrEqual(timeoutMs - 20);
  expect(outcome.ms).toBeLessThan(timeoutMs + marginMs);
}

/** The seqs of a session as a consumer of the real broker (not through the proxy) first sees them. */
async function landed(topics: TopicNames, sessionId: string, count: number): Promise<number[]> {
  const bus = await connectBus(topics);
  const received: DecodedRecord<TurnEvent>[] = [];
  const consumer = bus.consumer({
    groupId: uniqueName('g'),
    role: 'turns',
    onBatch: (records) => {
      received.push(...records);
      return Promise.resolve();
    },
  });
  await consumer.run();
  const mine = () => received.filter((r) => r.value.sessionId === sessionId);
  await eventually(
    () => new Set(mine().map((r) => r.value.seq)).size,
    (n) => n >= count,
  );
  for (const r of mine()) expect(r.value.turnId).toBe(`${sessionId}-${r.value.seq}`);
  // A republished turn may be there twice (the first send may have landed late): a redelivery.
  return [...new Set(mine().map((r) => r.value.seq))];
}

describe('the publisher, when the broker does not answer', () => {
  it.for<[string, (proxy: KafkaProxy) => Promise<void>]>([
    ['refuses connections (down or restarting)', (proxy: KafkaProxy) => proxy.refuse()],
    ['accepts but never answers (a partition)', (proxy: KafkaProxy) => Promise.resolve(proxy.freeze())],
  ])(
    'rejects within timeoutMs with a retriable send_timeout when the broker %s, and takes the same turns again once it answers',
    async ([, fault], context) => {
      const { topics, proxy, publisher } = await setup(context);
      await publisher.publishTurns(turnsOf('s', 1, 2));

      await fault(proxy);
      const first = timed(() => publisher.publishTurns(turnsOf('s', 3, 4)));
      // Accepted while the first is in flight, so sent after it: not sent once the first timed out
      // (it would land after a hole), and rejected, retriable, too.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const behind = timed(() => publisher.publishTurn(turnOf('s', 5)));
      expectTimedOut(await first);
      const queued = await behind;
      expect(queued.error).toMatchObject({ code: 'send_failed', retriable: true });
      expect((queued.error as Error).message).toMatch(
        /not sent: an earlier send of acme\/s failed or timed out/,
      );
      expect(queued.ms).toBeLessThan(timeoutMs + marginMs);

      // While the broker is still away, a republish times out the same way, and is not refused.
      expectTimedOut(await timed(() => publisher.publishTurns(turnsOf('s', 3, 4))));

      await proxy.restore();
      // Republished, same seqs: accepted (not refused as out of order) and acknowledged in time.
      const again = await timed(() => publisher.publishTurns(turnsOf('s', 3, 4)));
      expect(again.error).toBeUndefined();
      expect(again.ms).toBeLessThan(timeoutMs);
      // The session goes on from there, checked as before.
      await expect(publisher.publishTurn(turnOf('s', 6))).rejects.toMatchObject({ code: 'seq_out_of_order' });
      await publisher.publishTurn(turnOf('s', 5));
      expect(await landed(topics, 's', 5)).toEqual([1, 2, 3, 4, 5]);
    },
  );

  it('gives republished turns the same seqs when it assigns them', async (context) => {
    const { topics, proxy, publisher } = await setup(context, { assignSeq: true });
    const bare = (n: number) => {
      const { seq: _seq, ...turn } = turnOf('s', n);
      return turn;
    };
    await publisher.publishTurns([bare(1), bare(2)]);
    await proxy.refuse();
    expectTimedOut(await timed(() => publisher.publishTurns([bare(3), bare(4)])));
    await proxy.restore();
    const again = await publisher.publishTurns([bare(3), bare(4)]);
    expect(again.map((t) => t.seq)).toEqual([3, 4]);
    expect(await landed(topics, 's', 4)).toEqual([1, 2, 3, 4]);
  });

  it('rides out an outage shorter than timeoutMs', async (context) => {
    const { topics, proxy, publisher } = await setup(context, { timeoutMs: 15_000 });
    await publisher.publishTurn(turnOf('s', 1));
    await proxy.refuse();
    setTimeout(() => void proxy.restore(), 1_000);
    const outcome = await timed(() => publisher.publishTurns(turnsOf('s', 2, 3)));
    expect(outcome.error).toBeUndefined();
    expect(outcome.ms).toBeGreaterThanOrEqual(1_000);
    expect(await landed(topics, 's', 3)).toEqual([1, 2, 3]);
  });
});
