import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Compaction, DeadLetter, MarkerDecision, TurnEvent } from '@tidemark/core';
import {
  sessionKey,
  type DecodedRecord,
  type EventsByRole,
  type TopicRole,
  type Bus,
} from '@tidemark/contract';
import { kafkaAdmin, uniqueName } from '@tidemark/test-infra';
import { provisionTopics, topicNames } from '@tidemark/contract';
import { connectBus, eventually, isolatedTopics } from './helpers.js';
import { vectors } from './vectors.js';

const of = <T>(name: string): T => vectors.find((v) => v.name === name)!.value as T;
const turn = of<TurnEvent>('turn-event');

function turnsOf(tenantId: string, sessionId: string, count: number): TurnEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    ...turn,
    tenantId,
    sessionId,
    seq: i + 1,
    turnId: `${sessionId}-turn-${i + 1}`,
  }));
}

/** A running consumer of a role that collects what it receives. */
async function collect<R extends TopicRole>(bus: Bus, role: R, groupId = uniqueName('g')) {
  const received: DecodedRecord<EventsByRole[R]>[] = [];
  const consumer = bus.consumer({
    groupId,
    role,
    onBatch: (records) => {
      received.push(...records);
      return Promise.resolve();
    },
  });
  await consumer.run();
  return { received, consumer };
}

describe('the bus', () => {
  it('round-trips every event type through the real broker and registry, keyed and ordered per session', async () => {
    const topics = await isolatedTopics(3);
    const bus = await connectBus(topics);
    const producer = await bus.producer();
    const sessions = ['s-1', 's-2', 's-3'].map((s) => turnsOf('acme', s, 5));
    // Interleaved across sessions, sent in two batches.
    const interleaved = [0, 1, 2, 3, 4].flatMap((i) => sessions.map((s) => s[i]!));
    await producer.send('turns', interleaved.slice(0, 7));
    await producer.send('turns', interleaved.slice(7));
    const compaction = of<Compaction>('compaction');
    const decisions = [of<MarkerDecision>('marker-emitted'), of<MarkerDecision>('marker-invalid')];
    const deadLetter = of<DeadLetter>('dead-letter');
    await producer.send('compactions', [compaction]);
    await producer.send('markers', decisions);
    await producer.send('deadletter', [deadLetter]);

    const [turns, compactions, markers, deadLetters] = await Promise.all([
      collect(bus, 'turns'),
      collect(bus, 'compactions'),
      collect(bus, 'markers'),
      collect(bus, 'deadletter'),
    ]);
    await eventually(
      () => [turns, compactions, markers, deadLetters].map((c) => c.received.length),
      (n) => n.join() === '15,1,2,1',
    );

    for (const session of sessions) {
      const mine = turns.received.filter((r) => r.value.sessionId === session[0]!.sessionId);
      expect(mine.map((r) => r.value)).toStrictEqual(session);
      // One key, one partition, offsets in seq order.
      expect(new Set(mine.map((r) => r.raw.key?.toString()))).toEqual(
        new Set([sessionKey('acme', session[0]!.sessionId)]),
      );
      expect(new Set(mine.map((r) => r.raw.partition)).size).toBe(1);
      const offsets = mine.map((r) => r.raw.offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    }
    expect(compactions.received.map((r) => r.value)).toStrictEqual([compaction]);
    expect(markers.received.map((r) => r.value)).toStrictEqual(decisions);
    expect(deadLetters.received.map((r) => r.value)).toStrictEqual([deadLetter]);
    expect(deadLetters.received[0]!.raw.key?.toString()).toBe('acme/migration-42');

    // Deterministic on the wire: the same event sent again carries the same bytes.
    await producer.send('compactions', [structuredClone(compaction)]);
    await eventually(
      () => compactions.received.length,
      (n) => n === 2,
    );
    expect(compactions.received[1]!.raw.value!.equals(compactions.received[0]!.raw.value!)).toBe(true);

    expect(turns.consumer.ready()).toBe(true);
    await eventually(
      () => turns.consumer.lag(),
      (lag) => lag === 0,
    );
    await turns.consumer.stop();
    expect(turns.consumer.ready()).toBe(false);
  });

  it('redelivers a batch whose handler throws, loses nothing, and restarts the consumer after its retries', async () => {
    const topics = await isolatedTopics(1);
    const logs: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void logs.push(line) });
    const bus = await connectBus(topics, { logger });
    const producer = await bus.producer();
    const sent = turnsOf('acme', 'flaky', 6);
    await producer.send('turns', sent.slice(0, 3));

    let failures = 0;
    const delivered: TurnEvent[] = [];
    const groupId = uniqueName('g');
    const consumer = bus.consumer({
      groupId,
      role: 'turns',
      onBatch: (records) => {
        // More failures than the consumer's retries (5): kafkajs gives up, the consumer crashes and is
        // restarted; the batch comes back each time.
        if (failures < 7) {
          failures += 1;
          return Promise.reject(new Error(`handler failure ${failures}`));
        }
        delivered.push(...records.map((r) => r.value));
        return Promise.resolve();
      },
    });
    expect(consumer.ready()).toBe(false);
    expect(await consumer.lag()).toBe(3);
    await consumer.run();
    expect(consumer.ready()).toBe(true);
    await eventually(
      () => delivered.length,
      (n) => n === 3,
      60_000,
    );
    expect(failures).toBe(7);
    expect(logs.some((line) => line.includes('consumer crashed'))).toBe(true);
    await producer.send('turns', sent.slice(3));
    await eventually(
      () => delivered.length,
      (n) => n === 6,
    );
    expect(delivered).toStrictEqual(sent);
    await eventually(
      () => consumer.ready(),
      (ready) => ready,
    );
    await eventually(
      () => consumer.lag(),
      (lag) => lag === 0,
    );
    await consumer.stop();

    // Everything was committed: the same group starts after the last record.
    const again = await collect(bus, 'turns', groupId);
    await producer.send('turns', turnsOf('acme', 'after', 1));
    await eventually(
      () => again.received.length,
      (n) => n >= 1,
    );
    expect(again.received.map((r) => r.value.sessionId)).toEqual(['after']);
  });

  it('restarts a consumer that crashed for a cause kafkajs does not restart for', async () => {
    const topics = await isolatedTopics(1);
    const logs: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void logs.push(line) });
    const bus = await connectBus(topics, { logger });
    const sent = turnsOf('acme', 'bug', 2);
    await (await bus.producer()).send('turns', sent);
    let failures = 0;
    const delivered: TurnEvent[] = [];
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      onBatch: (records) => {
        if (failures < 2) {
          failures += 1;
          // Not retriable: kafkajs crashes the consumer without restarting it.
          return Promise.reject(Object.assign(new Error('a bug'), { retriable: false }));
        }
        delivered.push(...records.map((r) => r.value));
        return Promise.resolve();
      },
    });
    await consumer.run();
    await eventually(
      () => delivered.length,
      (n) => n === 2,
    );
    expect(delivered).toStrictEqual(sent);
    const crashes = logs
      .map((line) => JSON.parse(line) as { msg: string; restart?: boolean })
      .filter((l) => l.msg === 'consumer crashed');
    expect(crashes.map((c) => c.restart)).toEqual([false, false]);
    await eventually(
      () => consumer.ready(),
      (ready) => ready,
    );
  });

  it('stops after finishing and committing the batch in hand', async () => {
    const topics = await isolatedTopics(1);
    const bus = await connectBus(topics);
    await (await bus.producer()).send('turns', turnsOf('acme', 'slow', 3));
    let entered!: () => void;
    const inBatch = new Promise<void>((resolve) => (entered = resolve));
    let finished = 0;
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      onBatch: async (records) => {
        entered();
        await new Promise((resolve) => setTimeout(resolve, 500));
        finished += records.length;
      },
    });
    await consumer.run();
    await inBatch;
    await consumer.stop();
    expect(finished).toBe(3);
    expect(consumer.ready()).toBe(false);
    expect(await consumer.lag()).toBe(0);
  });

  it('refuses to send an invalid event, a marker to the wrong role or an oversize event, naming why', async () => {
    const topics = await isolatedTopics(1);
    const bus = await connectBus(topics, { maxEventBytes: 2048 });
    const producer = await bus.producer();
    await expect(producer.send('turns', [{ ...turn, turnId: '' }])).rejects.toThrow(
      /missing_ids: turnId is empty/,
    );
    await expect(producer.send('turns', [{ ...turn, content: 'x'.repeat(4096) }])).rejects.toThrow(
      /over the bound of 2048/,
    );
    await expect(producer.send('markers', [turn as unknown as MarkerDecision])).rejects.toThrow(
      /marker_emitted or marker_invalid/,
    );
  });

  it('provisions topics idempotently, even concurrently, with their settings', async () => {
    const topics = topicNames(`${uniqueName('t')}.`);
    const admin = await kafkaAdmin();
    await Promise.all([
      provisionTopics(admin, topics, { partitions: 3 }),
      provisionTopics(admin, topics, { partitions: 3 }),
    ]);
    await provisionTopics(admin, topics, { partitions: 3 });
    const { topics: metadata } = await admin.fetchTopicMetadata({ topics: Object.values(topics) });
    const partitions = Object.fromEntries(metadata.map((t) => [t.name, t.partitions.length]));
    expect(partitions).toEqual({
      [topics.turns]: 3,
      [topics.compactions]: 3,
      [topics.markers]: 3,
      [topics.revocations]: 3,
      [topics.regressions]: 3,
      [topics.deadletter]: 1,
    });
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: 2, name: topics.turns, configNames: ['retention.ms', 'cleanup.policy'] }],
    });
    const entries = Object.fromEntries(
      configs.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]),
    );
    expect(entries).toEqual({ 'retention.ms': '-1', 'cleanup.policy': 'delete' });
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 });
  });
});
