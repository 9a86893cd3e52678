import { pino, type Logger } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TurnEvent } from '@tidemark/core';
import type { EventConsumer } from '@tidemark/contract';
import { kafkaAdmin, uniqueName } from '@tidemark/test-infra';
import { connectBus, eventually, isolatedTopics } from './helpers.js';
import { vectors } from './vectors.js';

// A consumer that crashes is restarted and rejoins its group; it must not report ready between one
// crash and the next (issue 26: /readyz flapped 200/503 every 3–5 s while a consumer crash-looped).

const turn = vectors.find((v) => v.name === 'turn-event')!.value as TurnEvent;
const turnOf = (sessionId: string, seq: number): TurnEvent => ({
  ...turn,
  tenantId: 'acme',
  sessionId,
  seq,
  turnId: `${sessionId}-turn-${seq}`,
});

interface Line {
  time: number;
  level: number;
  msg: string;
  how?: string;
}

function capturedLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
  );
  return { logger, lines };
}

/** Samples `ready()` every 20 ms until the test finishes. */
function sampleReadiness(consumer: EventConsumer): { at: number; ready: boolean }[] {
  const samples: { at: number; ready: boolean }[] = [];
  const timer = setInterval(() => samples.push({ at: Date.now(), ready: consumer.ready() }), 20);
  onTestFinished(() => clearInterval(timer));
  return samples;
}

const crashes = (lines: Line[]) => lines.filter((l) => l.msg === 'consumer crashed');
const joins = (lines: Line[]) => lines.filter((l) => /joined the group/i.test(l.msg));

describe('consumer readiness after a crash', () => {
  it('stays not ready while it crash-loops, through each rejoin, and is ready once a batch goes through', async () => {
    const topics = await isolatedTopics(1);
    const { logger, lines } = capturedLogger();
    const bus = await connectBus(topics, { logger });
    await (await bus.producer()).send('turns', [turnOf('poison', 1)]);
    let poisoned = true;
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      onBatch: () => (poisoned ? Promise.reject(new Error('poison batch')) : Promise.resolve()),
    });
    await consumer.run();
    const samples = sampleReadiness(consumer);

    await eventually(
      () => crashes(lines).length,
      (n) => n >= 2,
      90_000,
    );
    const [first, second] = crashes(lines) as [Line, Line];
    // Between the two crashes it was restarted and joined its group again, and never reported ready.
    expect(joins(lines).some((j) => j.time > first.time && j.time < second.time)).toBe(true);
    const afterFirst = samples.filter((s) => s.at > first.time + 5);
    expect(afterFirst.length).toBeGreaterThan(100);
    expect(afterFirst.filter((s) => s.ready)).toEqual([]);

    poisoned = false;
    await eventually(
      () => consumer.ready(),
      (ready) => ready,
      60_000,
    );
    expect(lines.filter((l) => l.msg === 'consumer recovered').map((l) => l.how)).toEqual([
      'a batch went through',
    ]);
  });

  it('stays not ready while one partition crash-loops, though batches of another go through', async () => {
    const topics = await isolatedTopics(2);
    const { logger, lines } = capturedLogger();
    const bus = await connectBus(topics, { logger });
    const producer = await bus.producer();
    // Sessions spread over both partitions; traffic keeps coming while partition 0 keeps failing.
    const sessions = Array.from({ length: 8 }, (_, i) => `s-${i}`);
    let seq = 1;
    await producer.send(
      'turns',
      sessions.map((s) => turnOf(s, seq)),
    );
    const traffic = setInterval(() => {
      seq += 1;
      void producer.send(
        'turns',
        sessions.map((s) => turnOf(s, seq)),
      );
    }, 300);
    onTestFinished(() => clearInterval(traffic));
    let poisoned = true;
    const through: { at: number; partition: number }[] = [];
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      partitionsConsumedConcurrently: 2,
      onBatch: (_records, context) => {
        if (poisoned && context.partition === 0) return Promise.reject(new Error('poison partition'));
        through.push({ at: Date.now(), partition: context.partition });
        return Promise.resolve();
      },
    });
    await consumer.run();
    const samples = sampleReadiness(consumer);

    await eventually(
      () => crashes(lines).length,
      (n) => n >= 2,
      90_000,
    );
    const [first] = crashes(lines) as [Line];
    expect(through.filter((t) => t.partition === 1 && t.at > first.time).length).toBeGreaterThan(0);
    expect(samples.filter((s) => s.at > first.time + 5 && s.ready)).toEqual([]);

    poisoned = false;
    await eventually(
      () => consumer.ready(),
      (ready) => ready,
      60_000,
    );
  });

  it('is ready again after a crash once it rejoined with nothing to process (lag 0)', async () => {
    const topics = await isolatedTopics(1);
    const { logger, lines } = capturedLogger();
    const bus = await connectBus(topics, { logger });
    await (await bus.producer()).send('turns', [turnOf('poison', 1)]);
    let handled = 0;
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      onBatch: () => {
        handled += 1;
        return Promise.reject(new Error('poison batch'));
      },
    });
    await consumer.run();
    await eventually(
      () => crashes(lines).length,
      (n) => n >= 1,
      60_000,
    );
    expect(consumer.ready()).toBe(false);
    // The poison record goes (retention would do the same): nothing is left for the group to process.
    const admin = await kafkaAdmin();
    await admin.fetchTopicMetadata({ topics: [topics.turns] });
    await admin.deleteTopicRecords({ topic: topics.turns, partitions: [{ partition: 0, offset: '-1' }] });

    await eventually(
      () => consumer.ready(),
      (ready) => ready,
      60_000,
    );
    expect(await consumer.lag()).toBe(0);
    expect(handled).toBeGreaterThan(0);
    expect(lines.filter((l) => l.msg === 'consumer recovered').map((l) => l.how)).toEqual([
      'rejoined with nothing to do',
    ]);
  });
});
