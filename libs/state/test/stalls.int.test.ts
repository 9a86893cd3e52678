import { generateSession, seededRandom, type TurnEvent } from '@tidemark/core';
import { redisClient } from '@tidemark/test-infra';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Projection, type PositionedTurn } from '../src/index.js';

// The projection's index of stalled sessions (sessions waiting for a turn past their watermark that is
// not at hand): what the materializer's stalled-sessions gauge reads. It must count exactly the sessions
// whose watermark says `stalled`, whatever order turns arrive in, and go with the projection.

function projection(): { store: Projection; prefix: string; redis: Redis } {
  const { redis, prefix } = redisClient();
  return { store: new Projection(redis, { prefix }), prefix, redis };
}

const positioned = (turns: readonly TurnEvent[]): PositionedTurn[] =>
  turns.map((turn, offset) => ({ turn, partition: 0, offset }));

describe('the stalled-sessions index', () => {
  it('counts a session from the gap until the turn it waits for is applied, and says when it changed', async () => {
    const { store } = projection();
    const turns = generateSession(21, { turns: 7, sessionId: 'gap' });
    await store.applyBatch(positioned(turns.slice(0, 3)));
    expect(await store.stalledSessions()).toBe(0);

    const epoch = (await store.epoch())!;
    const parked = await store.applyBatchInEpoch(epoch, positioned(turns.slice(5)));
    expect(parked).toMatchObject({
      ok: true,
      stalls: [{ change: 'began', tenantId: 'tenant-a', sessionId: 'gap', expectedSeq: 4 }],
    });
    expect(await store.stalledSessions()).toBe(1);

    // 4 arrives: still waiting (for 5 now), nothing new to tell (the entry is re-asserted).
    expect(await store.applyBatchInEpoch(epoch, positioned([turns[3]!]))).toMatchObject({
      stalls: [{ change: 'continued', sessionId: 'gap', expectedSeq: 5 }],
    });
    expect(await store.stalledSessions()).toBe(1);

    // 5 arrives: 6 and 7 are at hand (parked, released to be published again), so nothing is awaited.
    expect(await store.applyBatchInEpoch(epoch, positioned([turns[4]!]))).toMatchObject({
      stalls: [{ change: 'ended', tenantId: 'tenant-a', sessionId: 'gap' }],
    });
    expect(await store.stalledSessions()).toBe(0);
  });

  it('counts a turn refused before the projection saw it, but not a break that stops nothing', async () => {
    const { store } = projection();
    await store.applyBatch(positioned(generateSession(22, { turns: 3, sessionId: 'marked' })));
    await store.markBroken('tenant-a', 'marked', 2, 'invalid_event'); // at or below the watermark
    expect(await store.stalledSessions()).toBe(0);
    await store.markBroken('tenant-a', 'marked', 4, 'invalid_event'); // the next turn itself
    expect(await store.stalledSessions()).toBe(0); // the earlier mark (2) is kept: not waiting
    await store.applyBatch(positioned(generateSession(23, { turns: 2, sessionId: 'fresh' })));
    await store.markBroken('tenant-a', 'fresh', 3, 'invalid_event');
    expect(await store.stalledSessions()).toBe(1);
    expect((await store.watermark('tenant-a', 'fresh')).stalled).toMatchObject({ expectedSeq: 3 });
  });

  it('keeps sessions whose ids would share a naive key apart, braces and globs included', async () => {
    const { store } = projection();
    const one = generateSession(24, { turns: 3, tenantId: 'a', sessionId: 'x/s' });
    const two = generateSession(24, { turns: 3, tenantId: 'a/x', sessionId: 's' });
    const braces = generateSession(24, { turns: 3, tenantId: '}a{', sessionId: '{}*:%7D' });
    await store.applyBatch(positioned([one[0]!, one[2]!, two[0]!, two[2]!, braces[0]!, braces[2]!]));
    expect(await store.stalledSessions()).toBe(3);
    await store.applyBatch(positioned([one[1]!, one[2]!]));
    expect(await store.stalledSessions()).toBe(2);
    expect((await store.watermark('a/x', 's')).stalled).toMatchObject({ expectedSeq: 2 });
    expect((await store.watermark('}a{', '{}*:%7D')).stalled).toMatchObject({ expectedSeq: 2 });
  });

  it('mends an index a crash left behind: a lost entry on the batch redelivery, a stale one at the gauge read', async () => {
    const { store, prefix, redis } = projection();
    const index = `${prefix}proj:stalled`;
    const turns = generateSession(25, { turns: 6, sessionId: 'crashed' });
    await store.applyBatch(positioned(turns.slice(0, 3)));
    const epoch = (await store.epoch())!;

    // The apply began the stall, and the process died before its index write: the entry is missing.
    await store.applyBatchInEpoch(epoch, positioned(turns.slice(4)));
    await redis.del(index);
    expect(await store.stalledSessions()).toBe(0);
    // The batch is redelivered (its offsets were not committed): the entry is back.
    const again = await store.applyBatchInEpoch(epoch, positioned(turns.slice(4)));
    expect(again).toMatchObject({ stalls: [{ change: 'continued', sessionId: 'crashed', expectedSeq: 4 }] });
    expect(await store.stalledSessions()).toBe(1);
    const since = (await store.watermark('tenant-a', 'crashed')).stalled?.since;
    expect(Number(await redis.zscore(index, (await redis.zrange(index, 0, -1))[0]!))).toBe(
      new Date(since!).getTime(),
    );

    // The missing turn ends the stall, and the process dies before the removal: the gauge drops it.
    const members = await redis.zrange(index, 0, -1, 'WITHSCORES');
    await store.applyBatchInEpoch(epoch, positioned(turns.slice(3)));
    await redis.zadd(index, members[1]!, members[0]!);
    expect(await redis.zcard(index)).toBe(1);
    expect(await store.stalledSessions()).toBe(0);
    expect(await redis.zcard(index)).toBe(0);
  });

  it('equals the sessions whose watermark says stalled, under any arrival order, and clears with the projection', async () => {
    const { store } = projection();
    const random = seededRandom(7);
    const sessions = Array.from({ length: 6 }, (_, i) =>
      generateSession(30 + i, { turns: 12, sessionId: `s${i}` }),
    );
    const bySeq = (sessionId: string, seq: number) =>
      sessions.find((turns) => turns[0]!.sessionId === sessionId)![seq - 1]!;
    // Each turn delivered once or twice, some held back and delivered later: gaps open and close, and
    // what a batch releases comes in the next, as the materializer publishes it again.
    const held: TurnEvent[] = [];
    let released: TurnEvent[] = [];
    let mostStalled = 0;
    for (let round = 0; round < 16; round++) {
      const batch: TurnEvent[] = [...released];
      for (const turns of sessions) {
        const turn = turns[round];
        if (turn !== undefined && random() < 0.2) held.push(turn);
        else if (turn !== undefined) batch.push(turn);
        if ((round >= 12 || random() < 0.3) && held.length > 0) batch.push(held.shift()!);
      }
      const applied = await store.applyTurns(positioned(batch));
      released = applied.released.map((r) => bySeq(r.sessionId, r.seq));
      const stalled = await Promise.all(
        sessions.map(async (turns) => (await store.watermark('tenant-a', turns[0]!.sessionId)).stalled),
      );
      const count = stalled.filter((s) => s !== null).length;
      expect(await store.stalledSessions()).toBe(count);
      mostStalled = Math.max(mostStalled, count);
    }
    expect(mostStalled).toBeGreaterThan(0);
    // Every turn came at last, parked ones published again once released: every session caught up.
    while (held.length > 0 || released.length > 0) {
      const applied = await store.applyTurns(positioned([...released, ...held.splice(0)]));
      released = applied.released.map((r) => bySeq(r.sessionId, r.seq));
    }
    expect(await store.stalledSessions()).toBe(0);
    for (const turns of sessions) {
      expect((await store.watermark('tenant-a', turns[0]!.sessionId)).appliedSeq).toBe(12);
    }

    await store.applyBatch(positioned(generateSession(40, { turns: 3, sessionId: 'late' }).slice(1)));
    expect(await store.stalledSessions()).toBe(1);
    await store.lifecycle.reset('another epoch');
    expect(await store.stalledSessions()).toBe(0);
  });
});
