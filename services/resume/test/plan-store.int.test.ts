import { definePolicy, generateSession, resumePlan, runReference } from '@tidemark/core';
import { PlanStore } from '@tidemark/state';
import { redisClient } from '@tidemark/test-infra';
import { describe, expect, it } from 'vitest';

const turns = generateSession(4, { tenantId: 't', sessionId: 's', turns: 30 });
const run = runReference(turns, { policy: definePolicy({ l1EveryTurns: 10 }) });
const plan = resumePlan(run.state, { tenantId: 't', sessionId: 's', l0Partition: 0 });
const ref = { tenantId: 't', sessionId: 's' };

describe('the PlanStore (real Redis)', () => {
  it('refuses a write from a stale version and one from another epoch', async () => {
    const { redis, prefix } = redisClient();
    const store = new PlanStore(redis, { prefix });
    expect(await store.load([ref])).toEqual({ ok: false, reason: 'no_epoch' });
    const epoch = await store.lifecycle.establishEpoch('e1');
    expect(await store.lifecycle.establishEpoch('e2')).toBe('e1');
    const loaded = await store.load([ref]);
    if (!loaded.ok) throw new Error('no epoch');
    expect(loaded.sessions.get('t/s')).toEqual({ version: 0, state: null, expired: false });

    const write = { ...ref, version: 0, state: '{"n":1}', plan };
    expect(await store.commit(epoch, [write])).toEqual({ ok: true });
    // The same version again: another writer got there first (a rebalance).
    expect(await store.commit(epoch, [write])).toEqual({ ok: false, reason: 'conflict', sessions: [ref] });
    expect(await store.commit('e-old', [{ ...write, version: 1 }])).toEqual({
      ok: false,
      reason: 'epoch',
      sessions: [ref],
    });
    const reloaded = await store.load([ref]);
    expect(reloaded.ok && reloaded.sessions.get('t/s')).toEqual({
      version: 1,
      state: '{"n":1}',
      expired: false,
    });
  });

  it("expires an idle session's plan and nodes together after the retention, and reports it expired until a plan is stored again", async () => {
    const { redis, prefix } = redisClient();
    const store = new PlanStore(redis, { prefix, retentionMs: 400 });
    const epoch = await store.lifecycle.establishEpoch('e1');
    await store.putNodes(run.compactions);
    expect(await store.commit(epoch, [{ ...ref, version: 0, state: '{}', plan }])).toEqual({ ok: true });
    expect(await store.read(ref)).toMatchObject({ ok: true, plan, expired: false });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await store.read(ref)).toEqual({
      ok: true,
      plan: null,
      node: null,
      compactedToSeq: 0,
      expired: true,
    });
    const loaded = await store.load([ref]);
    expect(loaded.ok && loaded.sessions.get('t/s')).toEqual({ version: 0, state: null, expired: true });
    // A worker that loaded the plan before it expired cannot write over its absence.
    expect(await store.commit(epoch, [{ ...ref, version: 1, state: '{}', plan }])).toMatchObject({
      ok: false,
      reason: 'conflict',
    });
    await store.putNodes(run.compactions);
    expect(await store.commit(epoch, [{ ...ref, version: 0, state: '{}', plan }])).toEqual({ ok: true });
    expect(await store.read(ref)).toMatchObject({ ok: true, plan, expired: false });
  });

  it('reads the plan and the node it starts from in one call, and nothing once the epoch is gone', async () => {
    const { redis, prefix } = redisClient();
    const store = new PlanStore(redis, { prefix });
    const epoch = await store.lifecycle.establishEpoch('e1');
    expect(await store.read(ref)).toEqual({
      ok: true,
      plan: null,
      node: null,
      compactedToSeq: 0,
      expired: false,
    });
    await store.commit(epoch, [{ ...ref, version: 0, state: '{}', plan }]);
    expect(plan.mode).toBe('digest');
    const nodeId = plan.mode === 'digest' ? plan.marker.compactionId : '';
    // The plan before its node: the node reads as absent (the API answers node_pending).
    expect(await store.read(ref)).toEqual({ ok: true, plan, node: null, compactedToSeq: 0, expired: false });
    await store.putNodes(run.compactions);
    const read = await store.read(ref);
    expect(read.ok && read.node?.compactionId).toBe(nodeId);
    expect(read.ok && read.plan).toEqual(plan);
    // The highest seq a stored node covers; nodes stored again from the start (a replay) do not lower it.
    const highest = Math.max(...run.compactions.map((c) => c.span.toSeq));
    expect(read.ok && read.compactedToSeq).toBe(highest);
    await store.putNodes(run.compactions.slice(0, 1));
    const again = await store.read(ref);
    expect(again.ok && again.compactedToSeq).toBe(highest);

    expect(await store.recordContextHash(ref, 'k', 'h1')).toBe('h1');
    expect(await store.recordContextHash(ref, 'k', 'h2')).toBe('h1');

    await redis.del(`${prefix}resume:epoch:4`);
    expect(await store.read(ref)).toEqual({ ok: false, reason: 'no_epoch' });
    await store.lifecycle.clear();
    expect(await redis.keys(`${prefix}resume*`)).toEqual([]);
  });
});
