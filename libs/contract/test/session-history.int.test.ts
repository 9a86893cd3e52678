import { generateSession } from '@tidemark/core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SessionHistory } from '../src/session-history.js';
import { connectBus, isolatedTopics } from './helpers.js';

// One session's records read back from its topic (what expired state is rebuilt from): the session's
// partition found from its key as the producers place it, every record of the session in offset order
// and no other session's, within the bounds asked.

describe('SessionHistory', () => {
  it("reads one session's records from the partition its key is on, in order, within the bounds asked", async () => {
    const topics = await isolatedTopics(4);
    const bus = await connectBus(topics);
    const producer = await bus.producer();
    const sessions = Array.from({ length: 8 }, (_, i) =>
      generateSession(60 + i, { tenantId: 'hist', sessionId: `s${i}`, turns: 6 }),
    );
    // Interleaved: each partition holds several sessions, turn by turn.
    for (let seq = 0; seq < 6; seq++)
      await producer.send(
        'turns',
        sessions.map((turns) => turns[seq]!),
      );
    const history = new SessionHistory(bus);
    onTestFinished(() => history.close());

    const partitions = new Set<number>();
    for (const turns of sessions) {
      const ref = turns[0]!;
      const read = await history.read('turns', ref);
      partitions.add(read.partition);
      expect(read.records.map((r) => r.value)).toEqual(turns);
      const offsets = read.records.map((r) => r.raw.offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      // Bounded: from the second record, before the last.
      const bounded = await history.read('turns', ref, {
        partition: read.partition,
        from: offsets[1]!,
        before: offsets[5]!,
      });
      expect(bounded.records.map((r) => r.value.seq)).toEqual([2, 3, 4, 5]);
      expect(bounded.end).toBe(offsets[5]);
      // Read on from where a read stopped: only what came since (nothing, here).
      expect((await history.read('turns', ref, { from: read.end })).records).toEqual([]);
    }
    // The sessions are spread over several partitions, so the key's partition was found, not assumed.
    expect(partitions.size).toBeGreaterThan(1);
    // A session with no record: nothing, from its partition.
    const none = await history.read('turns', { tenantId: 'hist', sessionId: 'none' });
    expect(none.records).toEqual([]);
    // It still says where it stopped: the partition's end, which the next read starts from.
    const admin = await bus.admin();
    const bounds = (await admin.fetchTopicOffsets(topics.turns)).find((o) => o.partition === none.partition);
    expect(none.end).toBe(Number(bounds!.high));
  });
});
