import { redisClient } from '@tidemark/test-infra';
import { foldDecisions, initialState, type MarkerDecision, type MarkerEmitted } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { FrameStore, sessionKeyOf } from '../src/frames.js';

// The validator's frame store against a real Redis: write-ahead records, their confirmation, the
// compare-and-set that keeps two writers apart, and the epoch that says whether it must be rebuilt.

const session = { tenantId: 'tenant-f', sessionId: 'session-f' };

function emitted(markerId: string): MarkerEmitted {
  return {
    type: 'marker_emitted',
    markerId,
    compactionId: `c-${markerId}`,
    tenantId: session.tenantId,
    sessionId: session.sessionId,
    depth: 1,
    generation: 1,
    toSeq: 40,
    l0Partition: 0,
    l0Offset: 39,
    compactorVersion: 'test',
  };
}

function store() {
  const { redis, prefix } = redisClient();
  return { redis, prefix, frames: new FrameStore(redis, { prefix }) };
}

describe('FrameStore', () => {
  it('has no epoch until restored, and then loads absent sessions as empty', async () => {
    const { frames } = store();
    expect(await frames.load([{ ...session, compactionIds: ['c1'] }])).toEqual({
      ok: false,
      reason: 'no_epoch',
    });
    await frames.restore('e1', []);
    const loaded = await frames.load([{ ...session, compactionIds: ['c1'] }]);
    expect(loaded.ok && loaded.sessions.get(sessionKeyOf(session))).toEqual({
      frame: { state: initialState, guard: { version: 0, epoch: '' } },
      expired: false,
      decided: new Map(),
    });
  });

  it("expires an idle session's frame and records after the retention, reports it expired, and restores it only over an absent frame", async () => {
    const { redis, prefix } = redisClient();
    const frames = new FrameStore(redis, { prefix, retentionMs: 300 });
    await frames.restore('e1', []);
    const decision: MarkerDecision = emitted('m1');
    const write = {
      ...session,
      guard: { version: 0, epoch: '' },
      state: foldDecisions([decision]),
      decided: [{ compactionId: 'c1', decisions: [decision] }],
    };
    expect(await frames.record('e1', [write])).toEqual({ ok: true });
    const load = async () => {
      const loaded = await frames.load([{ ...session, compactionIds: ['c1'] }]);
      return loaded.ok ? loaded.sessions.get(sessionKeyOf(session))! : null;
    };
    expect((await load())?.expired).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await load()).toEqual({
      frame: { state: initialState, guard: { version: 0, epoch: '' } },
      expired: true,
      decided: new Map(),
    });
    // A batch that read the frame before it expired cannot write over it.
    expect(await frames.record('e1', [{ ...write, guard: { version: 1, epoch: 'e1' } }])).toMatchObject({
      ok: false,
      reason: 'conflict',
    });
    const restored = { ...session, state: foldDecisions([decision]), published: ['c1'] };
    await frames.restoreExpired('e1', [restored]);
    await frames.restoreExpired('e1', [{ ...restored, state: initialState }]); // a second restorer: no-op
    expect(await load()).toEqual({
      frame: { state: foldDecisions([decision]), guard: { version: 1, epoch: 'e1' } },
      expired: false,
      decided: new Map([['c1', { status: 'published' }]]),
    });
  });

  it('records pending decisions with the frame, then confirms them published', async () => {
    const { frames } = store();
    await frames.restore('e1', []);
    const decision: MarkerDecision = emitted('m1');
    const recorded = await frames.record('e1', [
      {
        ...session,
        guard: { version: 0, epoch: '' },
        state: foldDecisions([decision]),
        decided: [{ compactionId: 'c1', decisions: [decision] }],
      },
    ]);
    expect(recorded).toEqual({ ok: true });
    const loaded = await frames.load([{ ...session, compactionIds: ['c1', 'c2'] }]);
    expect(loaded.ok && loaded.sessions.get(sessionKeyOf(session))).toEqual({
      frame: { state: foldDecisions([decision]), guard: { version: 1, epoch: 'e1' } },
      expired: false,
      decided: new Map([['c1', { status: 'pending', decisions: [decision] }]]),
    });
    expect(await frames.confirm('e1', [{ ...session, compactionIds: ['c1'] }])).toEqual([]);
    const confirmed = await frames.load([{ ...session, compactionIds: ['c1'] }]);
    expect(confirmed.ok && confirmed.sessions.get(sessionKeyOf(session))?.decided).toEqual(
      new Map([['c1', { status: 'published' }]]),
    );
  });

  it('refuses a write from a reader whose view moved (two validators on one session)', async () => {
    const { frames } = store();
    await frames.restore('e1', []);
    const write = {
      ...session,
      guard: { version: 0, epoch: '' },
      state: foldDecisions([]),
      decided: [],
    };
    expect(await frames.record('e1', [write])).toEqual({ ok: true });
    expect(await frames.record('e1', [write])).toEqual({
      ok: false,
      reason: 'conflict',
      sessions: [session],
    });
  });

  it('reports a lost store, never resurrects a session by a confirm, and rebuilds under a new epoch', async () => {
    const { redis, prefix, frames } = store();
    await frames.restore('e1', []);
    await frames.record('e1', [
      { ...session, guard: { version: 0, epoch: '' }, state: foldDecisions([]), decided: [] },
    ]);
    // Redis loses everything of ours.
    const keys = await redis.keys(`${prefix}*`);
    await redis.del(...keys);
    expect(await frames.epoch()).toBeNull();
    expect(await frames.confirm('e1', [{ ...session, compactionIds: ['c1'] }])).toEqual([session]);
    expect(await redis.keys(`${prefix}*`)).toEqual([]);
    const lost = await frames.record('e1', [
      { ...session, guard: { version: 1, epoch: 'e1' }, state: foldDecisions([]), decided: [] },
    ]);
    expect(lost).toMatchObject({ ok: false, reason: 'epoch' });

    await frames.lifecycle.clear();
    await frames.restore('e2', [{ ...session, state: foldDecisions([emitted('m1')]), published: ['c1'] }]);
    const loaded = await frames.load([{ ...session, compactionIds: ['c1'] }]);
    expect(loaded.ok && loaded.epoch).toBe('e2');
    expect(loaded.ok && loaded.sessions.get(sessionKeyOf(session))).toEqual({
      frame: { state: foldDecisions([emitted('m1')]), guard: { version: 1, epoch: 'e2' } },
      expired: false,
      decided: new Map([['c1', { status: 'published' }]]),
    });
  });

  it('reads a straggler session of an old epoch as absent, and lets the next write replace it', async () => {
    const { frames } = store();
    await frames.restore('e2', []);
    // A validator still on e1 writes a new session after the rebuild.
    await frames.record('e1', [
      {
        ...session,
        guard: { version: 0, epoch: '' },
        state: foldDecisions([emitted('old')]),
        decided: [{ compactionId: 'c-old', decisions: [emitted('old')] }],
      },
    ]);
    const loaded = await frames.load([{ ...session, compactionIds: ['c-old'] }]);
    const stale = loaded.ok ? loaded.sessions.get(sessionKeyOf(session)) : undefined;
    expect(stale).toEqual({
      frame: { state: initialState, guard: { version: 1, epoch: 'e1' } },
      expired: false,
      decided: new Map(),
    });
    expect(
      await frames.record('e2', [
        { ...session, guard: stale!.frame.guard, state: foldDecisions([]), decided: [] },
      ]),
    ).toEqual({ ok: true });
    const replaced = await frames.load([{ ...session, compactionIds: ['c-old'] }]);
    expect(replaced.ok && replaced.sessions.get(sessionKeyOf(session))?.decided).toEqual(new Map());
  });
});
