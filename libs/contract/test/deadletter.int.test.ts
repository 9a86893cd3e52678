import { describe, expect, it } from 'vitest';
import type { DeadLetter, DeadLetterReason, MarkerEmitted, TurnEvent } from '@tidemark/core';
import { encodeBody, frame, sessionKey, type DecodedRecord, type RawRecord } from '@tidemark/contract';
import { kafkaClient, uniqueName } from '@tidemark/test-infra';
import { connectBus, eventually, isolatedTopics } from './helpers.js';
import { vectors } from './vectors.js';

const turn = vectors[0]!.value as TurnEvent;
const emitted = vectors.find((v) => v.name === 'marker-emitted')!.value as MarkerEmitted;

describe('the consumer with bad input', () => {
  it('dead-letters each malformed record with its reason and original bytes, then consumes the next good one', async () => {
    const topics = await isolatedTopics(1);
    const maxEventBytes = 4096;
    const bus = await connectBus(topics, { maxEventBytes, service: 'materializer' });
    const key = sessionKey(turn.tenantId, turn.sessionId);
    let seq = 0;
    const good = (): TurnEvent => {
      seq += 1;
      return { ...turn, seq, turnId: `good-${seq}` };
    };
    const turnId = await bus.registry.idFor(topics.turns, 'TurnEvent');
    const markerId = await bus.registry.idFor(topics.markers, 'MarkerEmitted');
    const framedTurn = (value: unknown) => frame(turnId, encodeBody('TurnEvent', value));

    // Every malformed class, each between two good turns, all on one key so they share a partition.
    const bad: [DeadLetterReason, Buffer | null][] = [
      ['not_avro', Buffer.from('{"j"')],
      ['wrong_magic_byte', Buffer.from([1, ...framedTurn(good()).subarray(1)])],
      ['unknown_schema_id', frame(2_000_000_000, encodeBody('TurnEvent', turn))],
      ['unexpected_schema', frame(markerId, encodeBody('MarkerEmitted', emitted))],
      ['decode_failed', frame(turnId, Buffer.from([2, 97]))],
      ['empty_value', null],
      ['missing_ids', framedTurn({ ...turn, seq: 1, sessionId: '', turnId: 'x' })],
      ['invalid_event', framedTurn({ ...turn, seq: 0 })],
      ['oversize', framedTurn({ ...turn, content: 'x'.repeat(maxEventBytes) })],
    ];
    // The seqs of the good turns are 1.., skipping the one used inside the wrong-magic record above.
    seq = 0;
    const goods: TurnEvent[] = [];
    const messages: { key: string; value: Buffer | null }[] = [];
    const push = () => {
      const t = good();
      goods.push(t);
      messages.push({ key, value: framedTurn(t) });
    };
    push();
    for (const [, value] of bad) {
      messages.push({ key, value });
      push();
    }
    const producer = kafkaClient().producer();
    await producer.connect();
    await producer.send({ topic: topics.turns, acks: -1, messages });
    await producer.disconnect();

    const received: DecodedRecord<TurnEvent>[] = [];
    const counted: DeadLetterReason[] = [];
    const turns = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      onBatch: (records) => {
        received.push(...records);
        return Promise.resolve();
      },
      onDeadLetter: (_record, reason) => counted.push(reason),
    });
    const deadLetters: DecodedRecord<DeadLetter>[] = [];
    const letters = bus.consumer({
      groupId: uniqueName('g'),
      role: 'deadletter',
      onBatch: (records) => {
        deadLetters.push(...records);
        return Promise.resolve();
      },
    });
    await Promise.all([turns.run(), letters.run()]);
    // The dead letters may be read back before the send that wrote them returns (and tells onDeadLetter).
    await eventually(
      () => [received.length, deadLetters.length, counted.length],
      ([r, d, c]) => r === goods.length && d === bad.length && c === bad.length,
    );

    expect(received.map((r) => r.value)).toStrictEqual(goods);
    expect(deadLetters.map((d) => d.value.reason)).toEqual(bad.map(([reason]) => reason));
    expect(counted).toEqual(bad.map(([reason]) => reason));
    const goodOffsets = new Set(received.map((r) => r.raw.offset));
    for (const [index, { value: letter, raw }] of deadLetters.entries()) {
      const [, original] = bad[index]!;
      expect(letter.originalTopic).toBe(topics.turns);
      expect(letter.partition).toBe(0);
      expect(letter.offset).toBe(2 * index + 1);
      expect(goodOffsets.has(letter.offset)).toBe(false);
      expect(letter.value === null ? null : Buffer.from(letter.value)).toEqual(original);
      expect(Buffer.from(letter.key!).toString()).toBe(key);
      expect(raw.key?.toString()).toBe(key);
      expect(letter.service).toBe('materializer');
      expect(letter.message.length).toBeGreaterThan(0);
      expect(Math.abs(letter.observedAt - Date.now())).toBeLessThan(120_000);
    }
    await eventually(
      () => turns.lag(),
      (lag) => lag === 0,
    );
  });

  it('dead-letters nothing twice when the handler fails the batch holding a bad record', async () => {
    const topics = await isolatedTopics(1);
    const bus = await connectBus(topics);
    const key = sessionKey(turn.tenantId, turn.sessionId);
    const turnId = await bus.registry.idFor(topics.turns, 'TurnEvent');
    const producer = kafkaClient().producer();
    await producer.connect();
    await producer.send({
      topic: topics.turns,
      acks: -1,
      messages: [
        { key, value: Buffer.from([9, 9, 9, 9, 9, 9]) },
        { key, value: frame(turnId, encodeBody('TurnEvent', turn)) },
      ],
    });
    await producer.disconnect();
    let calls = 0;
    const dead: RawRecord[] = [];
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      onBatch: () => {
        calls += 1;
        return calls === 1 ? Promise.reject(new Error('not yet')) : Promise.resolve();
      },
      onDeadLetter: (record) => dead.push(record),
    });
    await consumer.run();
    await eventually(
      () => calls,
      (n) => n >= 2,
    );
    await eventually(
      () => consumer.lag(),
      (lag) => lag === 0,
    );
    expect(dead.map((r) => r.offset)).toEqual([0]);
  });
});

describe('a replaying consumer', () => {
  it('skips bad records without dead-lettering them again when asked', async () => {
    const topics = await isolatedTopics(1);
    const bus = await connectBus(topics);
    const producer = kafkaClient().producer();
    await producer.connect();
    await producer.send({
      topic: topics.turns,
      acks: -1,
      messages: [{ key: 'k', value: Buffer.from('nope!') }],
    });
    await producer.disconnect();
    const told: DeadLetterReason[] = [];
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      publishDeadLetters: false,
      onBatch: () => Promise.resolve(),
      onDeadLetter: (_record, reason) => told.push(reason),
    });
    await consumer.run();
    await eventually(
      () => consumer.lag(),
      (lag) => lag === 0,
    );
    expect(told).toEqual(['wrong_magic_byte']);
    const admin = await bus.admin();
    const [deadletter] = await admin.fetchTopicOffsets(topics.deadletter);
    expect(deadletter?.high).toBe('0');
  });
});

describe('one owner per bad record', () => {
  it('has only the topic owner dead-letter it: another reader of turns.l0 (the compactor) counts and skips it', async () => {
    const topics = await isolatedTopics(1);
    const producer = kafkaClient().producer();
    await producer.connect();
    await producer.send({
      topic: topics.turns,
      acks: -1,
      messages: [{ key: 'k', value: Buffer.from('nope!') }],
    });
    await producer.disconnect();
    const read = async (service: string) => {
      const bus = await connectBus(topics, { service });
      const told: DeadLetterReason[] = [];
      const consumer = bus.consumer({
        groupId: uniqueName('g'),
        role: 'turns',
        onBatch: () => Promise.resolve(),
        onDeadLetter: (_record, reason) => told.push(reason),
      });
      await consumer.run();
      await eventually(
        () => consumer.lag(),
        (lag) => lag === 0,
      );
      const admin = await bus.admin();
      const [deadletter] = await admin.fetchTopicOffsets(topics.deadletter);
      return { told, deadLetters: Number(deadletter?.high) };
    };
    expect(await read('compactor')).toEqual({ told: ['wrong_magic_byte'], deadLetters: 0 });
    expect(await read('materializer')).toEqual({ told: ['wrong_magic_byte'], deadLetters: 1 });
    // Read again by either, it is not dead-lettered a second time by the one that does not own it.
    expect(await read('compactor')).toEqual({ told: ['wrong_magic_byte'], deadLetters: 1 });
  });
});
