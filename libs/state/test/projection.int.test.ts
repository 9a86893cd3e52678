import {
  foldTurns,
  generateSession,
  seededRandom,
  SessionFold,
  type BoundaryQuery,
  type StateChange,
  type TurnEvent,
} from '@tidemark/core';
import { redisClient } from '@tidemark/test-infra';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Projection, type PositionedTurn } from '../src/index.js';
import { stateAtArgs } from '../src/projection-read.js';

// The projection against the oracle: core's SessionFold over the same turns. Every outcome of every
// apply, and stateAt at many boundaries, spans and claimed lookups, must deep-equal the fold's.

function projection(): {
  projection: Projection;
  redis: ReturnType<typeof redisClient>['redis'];
  prefix: string;
} {
  const { redis, prefix } = redisClient();
  return { projection: new Projection(redis, { prefix }), redis, prefix };
}

const positioned = (turns: readonly TurnEvent[], partition = 0): PositionedTurn[] =>
  turns.map((turn, index) => ({ turn, partition, offset: index }));

/** Splits a list into batches of random sizes (1..max). */
function batches<T>(items: readonly T[], random: () => number, max: number): T[][] {
  const out: T[][] = [];
  for (let at = 0; at < items.length;) {
    const size = 1 + Math.floor(random() * max);
    out.push(items.slice(at, at + size));
    at += size;
  }
  return out;
}

/** Everything a session names: item ids, disposition keys and paths, plus some it never names. */
function vocabulary(turns: readonly TurnEvent[]): { ids: string[]; keys: string[]; paths: string[] } {
  const ids = new Set<string>(['never-opened']);
  const keys = new Set<string>(['approach:never-tried']);
  const paths = new Set<string>(['src/never-written.ts']);
  for (const turn of turns) {
    for (const change of turn.changes) {
      if (change.type === 'item_opened' || change.type === 'item_closed') ids.add(change.itemId);
      if (change.type === 'item_disposed') keys.add(change.itemKey);
      if (change.type === 'artifact_recorded') paths.add(change.path);
    }
  }
  return { ids: [...ids], keys: [...keys], paths: [...paths] };
}

function randomQueries(
  fold: SessionFold,
  turns: readonly TurnEvent[],
  random: () => number,
  count: number,
): BoundaryQuery[] {
  const words = vocabulary(turns);
  const last = Math.max(
    1,
    turns.reduce((max, turn) => Math.max(max, turn.seq), 1),
  );
  const some = (list: readonly string[]): string[] => list.filter(() => random() < 0.3);
  const queries: BoundaryQuery[] = [];
  for (let i = 0; i < count; i++) {
    const toSeq = 1 + Math.floor(random() * (last + 2));
    const fromSeq = i % 4 === 0 ? 1 : 1 + Math.floor(random() * toSeq);
    queries.push({
      tenantId: fold.tenantId,
      sessionId: fold.sessionId,
      fromSeq,
      toSeq,
      itemIds: some(words.ids),
      itemKeys: some(words.keys),
      paths: some(words.paths),
    });
  }
  return queries;
}

async function expectSameState(
  store: Projection,
  fold: SessionFold,
  turns: readonly TurnEvent[],
  random: () => number,
  count: number,
): Promise<void> {
  for (const query of randomQueries(fold, turns, random, count)) {
    expect(await store.stateAt(query), `${query.fromSeq}..${query.toSeq}`).toEqual(fold.stateAt(query));
  }
}

/**
 * A hostile delivery of a session: redeliveries (some under another turnId), copies with other content
 * (the latest seq or an earlier one), a gap now and then,
 * and bad changes (closing unknown items, closing twice, opening twice, empty ids, unknown symbols).
 */
function hostile(turns: readonly TurnEvent[], random: () => number, gaps: boolean): TurnEvent[] {
  const out: TurnEvent[] = [];
  const seen: TurnEvent[] = [];
  for (const turn of turns) {
    if (gaps && random() < 0.01) continue;
    let changes: StateChange[] = [...turn.changes];
    const roll = random();
    if (roll < 0.05)
      changes.push({ type: 'item_closed', itemId: `ghost-${turn.seq}`, outcome: 'ok', detail: null });
    else if (roll < 0.08 && seen.length > 0) {
      const opened = seen.flatMap((t) => t.changes).find((c) => c.type === 'item_opened');
      if (opened !== undefined) changes.push(opened, { ...opened, type: 'item_opened' });
    } else if (roll < 0.1) {
      changes = [
        {
          type: 'item_opened',
          itemId: '',
          kind: 'tool_call',
          name: 'x',
          detail: null,
          handle: null,
          logPath: null,
        },
        ...changes,
      ];
    } else if (roll < 0.12) {
      changes.push({
        type: 'item_disposed',
        itemKey: `k-${turn.seq}`,
        disposition: 'superseded',
        reason: 'r',
        supersededBy: null,
      });
    } else if (roll < 0.14) {
      const closes = changes.filter((c) => c.type === 'item_closed');
      changes.push(...closes);
    } else if (roll < 0.18 && seen.length > 0) {
      // Dispose an item that may be open, closed or already disposed: only an open one ends here.
      const ids = seen.flatMap((t) => t.changes).flatMap((c) => (c.type === 'item_opened' ? [c.itemId] : []));
      const itemKey = ids[Math.floor(random() * ids.length)];
      if (itemKey !== undefined) {
        changes.push({
          type: 'item_disposed',
          itemKey,
          disposition: 'failed',
          reason: 'gave up',
          supersededBy: null,
        });
      }
    } else if (roll < 0.19) {
      changes.push({ type: 'artifact_recorded', path: 'a.ts', action: 'exploded' as never, digest: null });
    }
    const next = { ...turn, changes };
    out.push(next);
    seen.push(next);
    const again = random();
    if (again < 0.05) out.push(next);
    // Resent under another id and time: the same content, a redelivery.
    else if (again < 0.065)
      out.push({ ...next, turnId: `${next.turnId}-resent`, timestamp: next.timestamp + 1 });
    else if (again < 0.08) out.push({ ...next, turnId: `${next.turnId}-other`, content: `${next.content}!` });
    else if (again < 0.1 && seen.length > 2) {
      const earlier = seen[Math.floor(random() * (seen.length - 1))]!;
      out.push(
        random() < 0.5 ? earlier : { ...earlier, changes: [], content: `${earlier.content} (rewritten)` },
      );
    }
  }
  return out;
}

// Property runs (and fast-check's shrinking re-runs) share a store: each run gets a session of its own.
let runs = 0;

describe('Projection', () => {
  it('answers stateAt as the core fold does, batch by batch, for generated sessions', async () => {
    const { projection: store } = projection();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.double({ min: 0.2, max: 1, noNaN: true }),
        async (seed, activity) => {
          const random = seededRandom(seed ^ 0x5eed);
          const turns = generateSession(seed, { turns: 120, activity, sessionId: `s-${++runs}` });
          const fold = new SessionFold(turns[0]!.tenantId, turns[0]!.sessionId);
          const applied: TurnEvent[] = [];
          for (const batch of batches(positioned(turns), random, 40)) {
            const outcomes = await store.applyBatch(batch);
            expect(outcomes.map((o) => o.result)).toEqual(batch.map((p) => fold.apply(p.turn)));
            applied.push(...batch.map((p) => p.turn));
            await expectSameState(store, fold, applied, random, 8);
          }
          await expectSameState(store, fold, turns, random, 40);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('matches the fold on hostile input: redeliveries, conflicts, regressions, gaps and bad changes', async () => {
    const { projection: store } = projection();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1_000_000 }), fc.boolean(), async (seed, gaps) => {
        const random = seededRandom(seed);
        const clean = generateSession(seed, { turns: 100, sessionId: `h-${++runs}`, activity: 0.8 });
        const turns = hostile(clean, random, gaps);
        const { fold, results } = foldTurns(clean[0]!.tenantId, clean[0]!.sessionId, turns);
        const outcomes = [];
        for (const batch of batches(positioned(turns), random, 25))
          outcomes.push(...(await store.applyBatch(batch)));
        expect(outcomes.map((o) => o.result)).toEqual(results);
        await expectSameState(store, fold, turns, random, 30);

        // The broken mark: the earliest turn refused (a parked one is not) or with a skipped change, with
        // its reason.
        const first = outcomes
          .map(({ result, parked }) =>
            result.ok
              ? result.rejected.length > 0
                ? { seq: result.seq, reason: result.rejected[0]!.reason }
                : null
              : parked
                ? null
                : { seq: result.seq, reason: result.reason },
          )
          .filter((mark) => mark !== null)
          .reduce<{ seq: number; reason: string } | null>(
            (min, mark) => (min === null || mark.seq < min.seq ? mark : min),
            null,
          );
        const watermark = await store.watermark(fold.tenantId, fold.sessionId);
        expect(watermark.appliedSeq).toBe(fold.appliedSeq);
        expect(watermark.broken).toEqual(first);
      }),
      { numRuns: 10 },
    );
  });

  it('applies a long run of one session in one batch (split into several script calls) in order', async () => {
    const { projection: store } = projection();
    const random = seededRandom(99);
    const turns = hostile(
      generateSession(31, { turns: 700, sessionId: 'long-run', activity: 0.7 }),
      random,
      false,
    );
    const { fold, results } = foldTurns('tenant-a', 'long-run', turns);
    const outcomes = await store.applyBatch(positioned(turns));
    expect(outcomes.map((o) => o.result)).toEqual(results);
    await expectSameState(store, fold, turns, random, 30);
  });

  it('reads of a boundary fetch the items open at it, not those opened after it or ended before it', async () => {
    // A reader behind the materializer (a lagging compactor or validator, a replay) asks for an early
    // boundary: the items opened and ended since are none of its business, and used to be most of the
    // reply; a reader close behind asks for a late one, and the items ended before it are none either.
    const { projection: store, redis, prefix } = projection();
    const turns = generateSession(7, { turns: 400, sessionId: 'far-behind', activity: 0.8 });
    const { fold } = foldTurns('tenant-a', 'far-behind', turns);
    await store.applyBatch(positioned(turns));
    const { ids } = vocabulary(turns);
    const all = [...fold.stateAt({ ...query(1, 400), itemIds: ids }).lookup.items.values()];
    const raw = redis as unknown as {
      tidemarkProjectionStateAt(...args: (string | number)[]): Promise<unknown[]>;
    };
    for (const toSeq of [20, 60, 150, 300, 390]) {
      const ended = all.filter((item) => item.end !== null);
      expect(
        ended.filter((item) => item.openedSeq > toSeq).length +
          ended.filter((item) => item.end!.seq <= toSeq).length,
      ).toBeGreaterThan(20);
      const reply = await raw.tidemarkProjectionStateAt(...stateAtArgs(prefix, query(1, toSeq)));
      const expected = fold.stateAt(query(1, toSeq));
      expect((reply[1] as string[]).toSorted(), `fetched for a boundary at ${toSeq}`).toEqual(
        expected.open.map((item) => item.itemId).toSorted(),
      );
      expect(await store.stateAt(query(1, toSeq))).toEqual(expected);
    }

    function query(fromSeq: number, toSeq: number): BoundaryQuery {
      return {
        tenantId: 'tenant-a',
        sessionId: 'far-behind',
        fromSeq,
        toSeq,
        itemIds: [],
        itemKeys: [],
        paths: [],
      };
    }
  });

  it('sends a looked-up item once: one already open or closed in the reply is answered "as above"', async () => {
    // Claims about a span name its own items: before, each came back twice (in the span's lists and as a
    // lookup), parsed twice. Ids outside the reply (closed before the span, never opened) are still fetched.
    const { projection: store, redis, prefix } = projection();
    const turns = generateSession(11, { turns: 200, sessionId: 'claims', activity: 0.8 });
    const { fold } = foldTurns('tenant-a', 'claims', turns);
    await store.applyBatch(positioned(turns));
    const raw = redis as unknown as {
      tidemarkProjectionStateAt(...args: (string | number)[]): Promise<unknown[]>;
    };
    const { ids } = vocabulary(turns);
    let sentOnce = 0;
    let fetched = 0;
    for (const [fromSeq, toSeq] of [
      [1, 40],
      [81, 120],
      [161, 200],
    ] as const) {
      const query: BoundaryQuery = {
        tenantId: 'tenant-a',
        sessionId: 'claims',
        fromSeq,
        toSeq,
        itemIds: ids,
        itemKeys: [],
        paths: [],
      };
      const reply = await raw.tidemarkProjectionStateAt(...stateAtArgs(prefix, query));
      const inReply = new Set([...(reply[1] as string[]), ...(reply[4] as string[])]);
      const items = reply[9] as unknown[];
      ids.forEach((id, i) => {
        if (inReply.has(id)) {
          expect(items[i], id).toBe(1);
          sentOnce += 1;
        } else {
          expect(items[i], id).not.toBe(1);
          if (items[i] !== null) fetched += 1;
        }
      });
      expect(await store.stateAt(query)).toEqual(fold.stateAt(query));
    }
    expect(sentOnce).toBeGreaterThan(10);
    expect(fetched).toBeGreaterThan(10);
  });

  it('answers a boundary with thousands of items open at it (read in chunks: a script call takes a few thousand arguments)', async () => {
    const { projection: store } = projection();
    const base = generateSession(5, { turns: 180, sessionId: 'crowded' });
    const id = (seq: number, i: number) => `item-${seq}-${i}`;
    const turns = base.map((turn): TurnEvent => {
      const changes: StateChange[] = Array.from({ length: 100 }, (_, i) =>
        turn.seq <= 90
          ? {
              type: 'item_opened',
              itemId: id(turn.seq, i),
              kind: 'tool_call',
              name: 'n',
              detail: null,
              handle: null,
              logPath: null,
            }
          : { type: 'item_closed', itemId: id(turn.seq - 90, i), outcome: 'ok', detail: null },
      );
      return { ...turn, changes };
    });
    const { fold } = foldTurns('tenant-a', 'crowded', turns);
    await store.applyBatch(positioned(turns));
    for (const [fromSeq, toSeq] of [
      [1, 90],
      [80, 120],
      [100, 180],
    ] as const) {
      const query: BoundaryQuery = {
        tenantId: 'tenant-a',
        sessionId: 'crowded',
        fromSeq,
        toSeq,
        itemIds: [],
        itemKeys: [],
        paths: [],
      };
      const expected = fold.stateAt(query);
      expect(expected.open.length + expected.closed.length, `${fromSeq}..${toSeq}`).toBeGreaterThan(2_000);
      expect(await store.stateAt(query), `${fromSeq}..${toSeq}`).toEqual(expected);
    }
  });

  it('keeps sessions apart when one batch interleaves several', async () => {
    const { projection: store } = projection();
    const sessions = [1, 2, 3].map((seed) =>
      generateSession(seed, { turns: 60, sessionId: `mix-${seed}`, tenantId: `t${seed % 2}` }),
    );
    const interleaved: PositionedTurn[] = [];
    for (let i = 0; i < 60; i++) {
      sessions.forEach((turns, partition) => interleaved.push({ turn: turns[i]!, partition, offset: i }));
    }
    await store.applyBatch(interleaved);
    const random = seededRandom(7);
    for (const turns of sessions) {
      const { fold } = foldTurns(turns[0]!.tenantId, turns[0]!.sessionId, turns);
      await expectSameState(store, fold, turns, random, 20);
    }
  });

  it('treats a redelivered batch as a no-op', async () => {
    const { projection: store, redis, prefix } = projection();
    const turns = positioned(generateSession(11, { turns: 80 }));
    await store.applyBatch(turns);
    const before = await dump(redis, prefix);
    const again = await store.applyBatch(turns.slice(20, 60));
    expect(again.every((o) => o.result.ok && o.result.duplicate)).toBe(true);
    expect(await dump(redis, prefix)).toEqual(before);
  });

  it('tells a redelivery the changes its first apply skipped, so no dead letter is lost to a crash', async () => {
    const { projection: store } = projection();
    const [first, second] = generateSession(12, { turns: 2, sessionId: 'skips' });
    const ghost: StateChange = { type: 'item_closed', itemId: 'ghost', outcome: 'ok', detail: null };
    const bad = { ...second!, changes: [ghost, ...second!.changes, { ...ghost, itemId: '' }] };
    const [, applied] = await store.applyBatch(positioned([first!, bad]));
    expect(applied!.skipped.map((r) => r.reason)).toEqual(['unknown_item', 'missing_ids']);
    const [redelivered] = await store.applyBatch([{ turn: bad, partition: 0, offset: 1 }]);
    expect(redelivered!.result).toEqual({ ok: true, seq: 2, duplicate: true, rejected: [] });
    expect(redelivered!.skipped).toEqual(applied!.skipped);
    expect((await store.watermark('tenant-a', 'skips')).broken).toEqual({ seq: 2, reason: 'unknown_item' });
    // A skipped change broke the session but did not stop it: nothing is awaited.
    expect((await store.watermark('tenant-a', 'skips')).stalled).toBeNull();
  });

  it('parks turns past a gap, says the session stalls (the seq it waits for, since when), and releases them once it comes', async () => {
    const { projection: store } = projection();
    const turns = generateSession(13, { turns: 8, sessionId: 'gap' });
    const at = (from: number, list: readonly TurnEvent[]) =>
      list.map((turn, i) => ({ turn, partition: 1, offset: from + i }));
    await store.applyTurns(at(0, turns.slice(0, 3)));
    const before = Date.now();
    // 4 and 5 are late: 6 and 7 are parked (refused as gaps by the fold's rule, but not dead letters).
    const early = await store.applyTurns(at(10, [turns[5]!, turns[6]!]));
    expect(early.outcomes.map((o) => [o.result.ok, o.parked])).toEqual([
      [false, true],
      [false, true],
    ]);
    const stalled = (await store.watermark('tenant-a', 'gap')).stalled;
    expect(stalled).toEqual({ expectedSeq: 4, since: expect.any(String) as unknown });
    expect(Date.parse(stalled!.since!)).toBeGreaterThanOrEqual(before - 1_000);
    // A redelivery of a parked turn is parked still.
    const again = await store.applyTurns(at(10, [turns[5]!]));
    expect(again.outcomes[0]).toMatchObject({ parked: true, result: { ok: false, reason: 'seq_gap' } });
    expect((await store.watermark('tenant-a', 'gap')).broken).toBeNull();
    // 4 arrives: the session now waits for 5, since the same moment; nothing is released yet.
    expect((await store.applyTurns(at(20, [turns[3]!]))).released).toEqual([]);
    expect((await store.watermark('tenant-a', 'gap')).stalled).toEqual({
      expectedSeq: 5,
      since: stalled!.since,
    });
    // 5 arrives: 6 and 7 are released (where they are in turns.l0), and the stall is over: they follow.
    const filled = await store.applyTurns(at(30, [turns[4]!]));
    expect(filled.released).toEqual([
      { tenantId: 'tenant-a', sessionId: 'gap', seq: 6, partition: 1, offset: 10 },
      { tenantId: 'tenant-a', sessionId: 'gap', seq: 7, partition: 1, offset: 11 },
    ]);
    expect(filled.stalls).toEqual([{ change: 'ended', tenantId: 'tenant-a', sessionId: 'gap' }]);
    expect(await store.watermark('tenant-a', 'gap')).toMatchObject({ appliedSeq: 5, stalled: null });
    // A redelivery of 5 (a crash before they were published) releases them again; a later batch does not.
    expect((await store.applyTurns(at(30, [turns[4]!]))).released.map((r) => r.seq)).toEqual([6, 7]);
    expect((await store.applyTurns(at(11, [turns[6]!]))).released).toEqual([]);
    // Published again, they apply like any turn, from their new positions; nothing is broken.
    const applied = await store.applyTurns(at(40, turns.slice(5)));
    expect(applied.outcomes.map((o) => o.result.ok)).toEqual([true, true, true]);
    expect(await store.watermark('tenant-a', 'gap')).toEqual({
      appliedSeq: 8,
      broken: null,
      stalled: null,
      offsets: { partition: 1, offset: 42 },
    });
    expect(await store.l0Position('tenant-a', 'gap', 6)).toEqual({ partition: 1, offset: 40 });
  });

  it('parks up to its bound; the next early turn is a seq_gap refusal that breaks the session there', async () => {
    const { redis, prefix } = redisClient();
    const store = new Projection(redis, { prefix, maxParkedTurns: 2 });
    const turns = generateSession(14, { turns: 8, sessionId: 'bound' });
    await store.applyTurns(positioned(turns.slice(0, 2)));
    const early = await store.applyTurns(positioned(turns.slice(3, 6)));
    expect(early.outcomes.map((o) => o.parked)).toEqual([true, true, false]);
    expect(await store.watermark('tenant-a', 'bound')).toMatchObject({
      appliedSeq: 2,
      broken: { seq: 6, reason: 'seq_gap' },
      stalled: { expectedSeq: 3 },
    });
    // 3 comes: 4 and 5 are released; 6 was refused, so the session waits for it (published again).
    const filled = await store.applyTurns(positioned([turns[2]!]));
    expect(filled.released.map((r) => r.seq)).toEqual([4, 5]);
    await store.applyTurns(positioned(turns.slice(3, 5)));
    expect((await store.watermark('tenant-a', 'bound')).stalled).toMatchObject({ expectedSeq: 6 });
  });

  it('records where each turn lives in turns.l0, and the watermark', async () => {
    const { projection: store } = projection();
    const turns = generateSession(3, { turns: 5, sessionId: 'pos' });
    await store.applyBatch(turns.map((turn, i) => ({ turn, partition: 2, offset: 100 + i })));
    expect(await store.l0Position('tenant-a', 'pos', 3)).toEqual({ partition: 2, offset: 102 });
    expect(await store.l0Position('tenant-a', 'pos', 6)).toBeNull();
    expect(await store.watermark('tenant-a', 'pos')).toEqual({
      appliedSeq: 5,
      broken: null,
      stalled: null,
      offsets: { partition: 2, offset: 104 },
    });
    expect(await store.watermark('tenant-a', 'none')).toEqual({
      appliedSeq: 0,
      broken: null,
      stalled: null,
      offsets: null,
    });
  });

  it('answers waits: ok once applied, timeout at the bound, broken past a break, rebuilding when lost', async () => {
    const { projection: store } = projection();
    const turns = generateSession(5, { turns: 10, sessionId: 'w' });
    await store.applyBatch(positioned(turns.slice(0, 6)));
    expect(await store.waitForWatermark('tenant-a', 'w', 6, 50)).toEqual({ ok: true });
    expect(await store.waitForWatermark('tenant-a', 'w', 7, 30)).toEqual({ ok: false, reason: 'timeout' });

    const waiting = store.waitForWatermark('tenant-a', 'w', 8, 2_000);
    await store.applyBatch(positioned(turns.slice(6, 8)));
    expect(await waiting).toEqual({ ok: true });

    // 10 early (parked): a wait past the watermark waits, for 9 or for the bound; no break.
    await store.applyBatch(positioned([turns[9]!]));
    expect(await store.waitForWatermark('tenant-a', 'w', 9, 30)).toEqual({ ok: false, reason: 'timeout' });
    expect((await store.watermark('tenant-a', 'w')).broken).toBeNull();
    // A refused turn at 9: waits past the watermark answer broken at once; boundaries before it stay ok.
    await store.markBroken('tenant-a', 'w', 9, 'invalid_event');
    const started = Date.now();
    expect(await store.waitForWatermark('tenant-a', 'w', 9, 5_000)).toEqual({ ok: false, reason: 'broken' });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await store.waitForWatermark('tenant-a', 'w', 8, 50)).toEqual({ ok: true });
    expect((await store.watermark('tenant-a', 'w')).broken).toEqual({ seq: 9, reason: 'invalid_event' });

    await store.invalidate('test');
    expect(await store.waitForWatermark('tenant-a', 'w', 8, 30)).toEqual({ ok: false, reason: 'rebuilding' });
  });

  it('refuses to trust a batch applied across a lost projection, and rebuilds under a new epoch', async () => {
    const { projection: store, redis, prefix } = projection();
    const turns = positioned(generateSession(9, { turns: 30, sessionId: 'e' }));
    await store.applyBatch(turns.slice(0, 10));
    const epoch = (await store.epoch())!;
    expect(epoch).not.toBeNull();
    expect(await store.applyBatchInEpoch(epoch, turns.slice(10, 20))).toMatchObject({ ok: true });

    // Lost: every key of the test's prefix gone, as after FLUSHALL.
    const keys = await redis.keys(`${prefix}*`);
    await redis.del(...keys);
    expect(await store.epoch()).toBeNull();
    expect(await store.applyBatchInEpoch(epoch, turns.slice(20))).toEqual({
      ok: false,
      reason: 'epoch_changed',
      epoch: null,
    });

    const next = await store.beginRebuild('lost');
    expect(await store.rebuilding()).toMatchObject({ epoch: next, reason: 'lost' });
    expect(await store.watermark('tenant-a', 'e')).toMatchObject({ appliedSeq: 0 });
    expect(await store.waitForWatermark('tenant-a', 'e', 5, 20)).toEqual({ ok: false, reason: 'rebuilding' });
    expect(await store.applyBatchInEpoch(next, turns)).toMatchObject({ ok: true });
    expect(await store.waitForWatermark('tenant-a', 'e', 30, 20)).toEqual({ ok: true });
    expect(await store.finishRebuild(next)).toBe(true);
    expect(await store.rebuilding()).toBeNull();
    expect(await store.finishRebuild('another')).toBe(false);
  });
});

async function dump(
  redis: ReturnType<typeof redisClient>['redis'],
  prefix: string,
): Promise<Record<string, unknown>> {
  const keys = (await redis.keys(`${prefix}*`)).sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await redis.type(key);
    out[key] =
      type === 'hash'
        ? await redis.hgetall(key)
        : type === 'zset'
          ? await redis.zrange(key, 0, -1, 'WITHSCORES')
          : await redis.get(key);
  }
  return out;
}
