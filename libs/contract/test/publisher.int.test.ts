import pino from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TurnEvent } from '@tidemark/core';
import { ContractError, createPublisher, topicNames, type DecodedRecord } from '@tidemark/contract';
import { endpoints, kafkaAdmin, uniqueName } from '@tidemark/test-infra';
import { provisionTopics } from '@tidemark/contract';
import { connectBus, eventually } from './helpers.js';
import { vectors } from './vectors.js';

const template = vectors[0]!.value as TurnEvent;
const turnOf = (sessionId: string, seq: number): TurnEvent => ({
  ...template,
  sessionId,
  seq,
  turnId: `${sessionId}-${seq}`,
});

async function setup(options: { assignSeq?: boolean; logger?: pino.Logger } = {}) {
  const prefix = `${uniqueName('t')}.`;
  const topics = topicNames(prefix);
  const admin = await kafkaAdmin();
  await provisionTopics(admin, topics, { partitions: 4 });
  onTestFinished(() =>
    admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined),
  );
  const publisher = await createPublisher({
    brokers: endpoints().kafkaBrokers,
    registryUrl: endpoints().schemaRegistryUrl,
    clientId: uniqueName('runtime'),
    topicPrefix: prefix,
    lingerMs: 5,
    maxBatchTurns: 50,
    ...options,
  });
  onTestFinished(() => publisher.close());
  return { topics, publisher };
}

describe('the publisher', () => {
  it("logs no warning of its own making: not kafkajs's about bounded retries of an idempotent producer", async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const { publisher } = await setup({ logger });
    const [turn] = await publisher.publishTurns([turnOf(uniqueName('s'), 1)]);
    expect(turn?.seq).toBe(1);
    await publisher.close();
    expect(lines).toEqual([]);
  });

  it('publishes turns in batches, each session in order on one partition', async () => {
    const { topics, publisher } = await setup();
    const sessions = ['a', 'b', 'c', 'd', 'e'];
    // 120 turns, interleaved across sessions, published concurrently one by one.
    const all = Array.from({ length: 24 }, (_, i) => sessions.map((s) => turnOf(s, i + 1))).flat();
    const published = await Promise.all(all.map((t) => publisher.publishTurn(t)));
    expect(published).toStrictEqual(all);
    await publisher.flush();

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
    await eventually(
      () => received.length,
      (n) => n === all.length,
    );
    for (const s of sessions) {
      const mine = received.filter((r) => r.value.sessionId === s);
      expect(mine.map((r) => r.value.seq)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
      expect(new Set(mine.map((r) => r.raw.partition)).size).toBe(1);
    }
  });

  it('refuses a seq that is not the session’s last + 1, naming tenant, session, expected and actual', async () => {
    const { publisher } = await setup();
    await publisher.publishTurns([turnOf('s', 1), turnOf('s', 2)]);
    const error = await publisher.publishTurn(turnOf('s', 4)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ContractError);
    expect((error as ContractError).code).toBe('seq_out_of_order');
    expect((error as Error).message).toBe('tenant acme session s: expected seq 3, got 4');
    // A refused call sends nothing: the session goes on from 2.
    await expect(publisher.publishTurns([turnOf('s', 3), turnOf('s', 3)])).rejects.toThrow(
      /expected seq 4, got 3/,
    );
    await expect(publisher.publishTurn(turnOf('s', 3))).resolves.toMatchObject({ seq: 3 });
    // Concurrent calls are checked in call order: a skipped seq is refused even while the previous
    // call is still waiting for its send.
    const [ok, skipped] = await Promise.allSettled([
      publisher.publishTurn(turnOf('s', 4)),
      publisher.publishTurn(turnOf('s', 6)),
    ]);
    expect(ok.status).toBe('fulfilled');
    expect(skipped).toMatchObject({ status: 'rejected', reason: { code: 'seq_out_of_order' } });
  });

  it('refuses an invalid turn before sending, with a clear error', async () => {
    const { publisher } = await setup();
    await expect(publisher.publishTurn({ ...turnOf('s', 1), turnId: '' })).rejects.toThrow(
      /turn 1 of acme\/s .*missing_ids: turnId is empty/,
    );
    await expect(publisher.publishTurn({ ...turnOf('s', 1), tokenCount: -1 })).rejects.toThrow(
      /invalid_event/,
    );
  });

  it('assigns seqs when asked, from 1 or after a resumed session’s last seq', async () => {
    const { publisher } = await setup({ assignSeq: true });
    const { seq: _seq, ...bare } = turnOf('s', 1);
    const first = await publisher.publishTurns([bare, bare]);
    expect(first.map((t) => t.seq)).toEqual([1, 2]);
    // Concurrent calls are sequenced in call order, never given the same seq.
    const concurrent = await Promise.all(Array.from({ length: 10 }, () => publisher.publishTurn(bare)));
    expect(concurrent.map((t) => t.seq)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    publisher.resumeSession('acme', 'resumed', 41);
    await expect(publisher.publishTurn({ ...bare, sessionId: 'resumed' })).resolves.toMatchObject({
      seq: 42,
    });
  });
});
