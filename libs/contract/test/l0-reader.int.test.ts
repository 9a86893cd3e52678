import { generateSession, sessionKey, type TurnEvent } from '@tidemark/core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { L0Reader, turnDecoder } from '../src/index.js';
import { connectBus, isolatedTopics } from './helpers.js';

// Reading one session's turns by offset from a busy partition: what a resume's raw tail costs. kafkajs
// decodes every record a fetch returns, so the reader asks for about the span, not its fetch bound.

describe('L0Reader', () => {
  it('reads a short span of a busy partition with fetches sized to the span, and a long one whole', async () => {
    const topics = await isolatedTopics(1);
    const bus = await connectBus(topics);
    const producer = await bus.producer();
    const quiet = generateSession(11, { tenantId: 'l0', sessionId: 'quiet', turns: 40 });
    const busy = generateSession(12, { tenantId: 'l0', sessionId: 'busy', turns: 2000 });
    // The quiet session's turns among the busy one's first 200, then the busy one goes on alone.
    const order: TurnEvent[] = [];
    busy.forEach((turn, i) => {
      order.push(turn);
      if (i % 5 === 4 && quiet[(i - 4) / 5] !== undefined) order.push(quiet[(i - 4) / 5]!);
    });
    for (let at = 0; at < order.length; at += 20) await producer.send('turns', order.slice(at, at + 20));

    const decode = turnDecoder(bus.registry, bus.maxEventBytes);
    const locate = new L0Reader({ kafka: bus.kafka, decode });
    onTestFinished(() => locate.close());
    const offsets: number[] = [];
    for await (const record of locate.keyedRecords(
      topics.turns,
      0,
      sessionKey('l0', 'quiet'),
      0,
      order.length,
    )) {
      offsets.push(record.offset);
    }
    expect(offsets).toHaveLength(40);

    let fetched = 0;
    const reader = new L0Reader({ kafka: bus.kafka, decode, onFetch: (records) => (fetched += records) });
    onTestFinished(() => reader.close());
    const span = {
      topic: topics.turns,
      partition: 0,
      key: sessionKey('l0', 'quiet'),
      fromOffset: offsets[0]!,
      toOffset: offsets.at(-1)!,
      fromSeq: 1,
      toSeq: 40,
    };
    expect(await reader.read(span)).toEqual(quiet);
    const before = fetched;
    // Once the reader knows the records' size: about the span's 240 offsets, not the partition's 2,040
    // records (all within one fetch bound).
    expect(await reader.read(span)).toEqual(quiet);
    const second = fetched - before;
    expect(second, 'records fetched for a 240-offset span').toBeLessThan(
      2 * (span.toOffset - span.fromOffset + 1),
    );
    expect(second).toBeGreaterThanOrEqual(span.toOffset - span.fromOffset + 1);

    // The whole busy session, fetch after fetch: every turn, in order.
    const all = await reader.read({
      ...span,
      key: sessionKey('l0', 'busy'),
      fromOffset: 0,
      toOffset: order.length - 1,
      toSeq: 2000,
    });
    expect(all).toEqual(busy);
  });
});
