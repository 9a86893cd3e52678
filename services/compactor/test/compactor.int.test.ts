import {
  canonicalJson,
  definePolicy,
  generateSession,
  runReference,
  type MarkerInvalid,
} from '@tidemark/core';
import { createLogger, Registry } from '@tidemark/service';
import { describe, expect, it, onTestFinished } from 'vitest';
import { create as createCompactor } from '../src/compactor.js';
import { policyOf } from '../src/config.js';
import { collectCompactions, distinct, hasIds, stage } from './harness.js';

const logger = createLogger('compactor-test', 'warn');
const version = 'tidemark-compactor/1';

async function runCompactor(config: ReturnType<Awaited<ReturnType<typeof stage>>['config']>) {
  const metrics = new Registry();
  const compactor = createCompactor(config, { logger, metrics });
  await compactor.run();
  onTestFinished(() => compactor.stop());
  return { compactor, metrics };
}

describe('the compactor', () => {
  it('compacts a 200-turn session into the reference L1s and L2, byte for byte, and the same again on a second run', async () => {
    const turns = generateSession(31, { turns: 200, sessionId: 'default-200' });
    const reference = runReference(turns, { policy: definePolicy(), compactorVersion: version });
    const bytes: string[] = [];
    for (let run = 0; run < 2; run++) {
      const s = await stage();
      const collected = await collectCompactions(s.bus);
      // Half before the compactor starts, half while it runs: batches of any shape give the same bytes.
      await s.publish(turns.slice(0, 100));
      const { metrics } = await runCompactor(s.config());
      await s.publish(turns.slice(100));
      await collected.waitFor(hasIds(reference.compactions.map((c) => c.compactionId)));
      // Counted once the batch's windows are committed, a moment after the compactions are visible.
      const counted = async () =>
        ((await metrics.getSingleMetric('tidemark_compactor_compactions_total')?.get())?.values ?? [])
          .map((v) => [v.labels.tier, v.labels.kind, v.value])
          .sort();
      const expected = [
        ['1', 'first', 5],
        ['2', 'first', 1],
      ];
      const deadline = Date.now() + 10_000;
      while (JSON.stringify(await counted()) !== JSON.stringify(expected) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await counted()).toEqual(expected);
      const published = [...distinct(collected.all).values()];
      expect(published.filter((c) => c.tier === 1).map((c) => [c.span.fromSeq, c.span.toSeq])).toEqual([
        [1, 40],
        [41, 80],
        [81, 120],
        [121, 160],
        [161, 200],
      ]);
      expect(published.filter((c) => c.tier === 2).map((c) => [c.span.fromSeq, c.span.toSeq])).toEqual([
        [1, 160],
      ]);
      expect(canonicalJson(published)).toBe(canonicalJson(reference.compactions));
      bytes.push(canonicalJson(collected.all));
    }
    expect(bytes[1]).toBe(bytes[0]);
  });

  it('publishes each lossy node with its strict repair right after it, the reference bytes, reading no decision', async () => {
    const s = await stage();
    const policy = definePolicy({ summarizer: 'narrative', digestFanIn: 2, l1EveryTurns: 20 });
    const turns = generateSession(32, { turns: 80, sessionId: 'repairs' });
    const reference = runReference(turns, { policy, compactorVersion: version, maxRepairs: 1 });
    expect(reference.compactions.filter((c) => c.attempt === 1).length).toBe(
      reference.compactions.filter((c) => c.attempt === 0).length,
    );

    const collected = await collectCompactions(s.bus);
    const config = s.config({ SUMMARIZER: 'narrative', DIGEST_FAN_IN: '2', L1_EVERY_TURNS: '20' });
    expect(policyOf(config)).toEqual(policy);
    await runCompactor(config);
    await s.publish(turns);
    await collected.waitFor(hasIds(reference.compactions.map((c) => c.compactionId)));
    // In the reference's order: each node, then its repair (the validator decides the repair only if
    // the node's verdict asks for it).
    expect(canonicalJson([...distinct(collected.all).values()])).toBe(canonicalJson(reference.compactions));
    // A MarkerInvalid on the markers topic changes nothing: the compactor does not read decisions.
    const producer = await s.bus.producer();
    const invalid = reference.decisions.find((d): d is MarkerInvalid => d.type === 'marker_invalid')!;
    await producer.send('markers', [invalid]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(distinct(collected.all).size).toBe(reference.compactions.length);
  });

  it('rebuilds its windows from turns.l0 when Redis loses them, republishing the same bytes', async () => {
    const s = await stage();
    const turns = generateSession(33, { turns: 120, sessionId: 'flushed' });
    const policy = definePolicy({ l1EveryTurns: 20, digestFanIn: 2 });
    const reference = runReference(turns, { policy, compactorVersion: version });
    const collected = await collectCompactions(s.bus);
    await runCompactor(s.config({ L1_EVERY_TURNS: '20', DIGEST_FAN_IN: '2' }));
    await s.publish(turns.slice(0, 70));
    const early = reference.compactions.filter((c) => c.span.toSeq <= 70);
    await collected.waitFor(hasIds(early.map((c) => c.compactionId)));
    // The compactor's keys vanish (a flush of its state; the projection is the materializer's to rebuild).
    const keys = await s.redis.keys(`${s.redisPrefix}cmp:*`);
    expect(keys.length).toBeGreaterThan(0);
    await s.redis.del(...keys);
    await s.publish(turns.slice(70));
    await collected.waitFor(hasIds(reference.compactions.map((c) => c.compactionId)));
    const published = distinct(collected.all);
    expect([...published.keys()].sort()).toEqual(reference.compactions.map((c) => c.compactionId).sort());
    expect(collected.all.length).toBeGreaterThan(published.size);
  });

  it('lets the window of a session idle past STATE_RETENTION_MS expire, and rebuilds it from turns.l0 when the session resumes, publishing nothing twice', async () => {
    const s = await stage();
    const turns = generateSession(36, { turns: 120, sessionId: 'idle' });
    const policy = definePolicy({ summarizer: 'narrative', l1EveryTurns: 20, digestFanIn: 2 });
    const reference = runReference(turns, { policy, compactorVersion: version, maxRepairs: 1 });
    const collected = await collectCompactions(s.bus);
    const { metrics } = await runCompactor(
      s.config({
        SUMMARIZER: 'narrative',
        L1_EVERY_TURNS: '20',
        DIGEST_FAN_IN: '2',
        STATE_RETENTION_MS: '1500',
      }),
    );
    await s.publish(turns.slice(0, 70));
    const early = reference.compactions.filter((c) => c.span.toSeq <= 70);
    await collected.waitFor(hasIds(early.map((c) => c.compactionId)));
    // Idle past the retention: every key of the session's window expires (together).
    const pattern = `${s.redisPrefix}cmp:*:{*`;
    expect((await s.redis.keys(pattern)).length).toBeGreaterThan(0);
    const deadline = Date.now() + 15_000;
    while ((await s.redis.keys(pattern)).length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await s.redis.keys(pattern)).toEqual([]);

    await s.publish(turns.slice(70));
    await collected.waitFor(hasIds(reference.compactions.map((c) => c.compactionId)));
    await new Promise((resolve) => setTimeout(resolve, 500));
    // The reference's nodes, in its order, each published once: what the window made before it expired
    // was not published again.
    expect(canonicalJson(collected.all)).toBe(canonicalJson(reference.compactions));
    const restored = await metrics.getSingleMetric('tidemark_compactor_windows_restored_total')?.get();
    expect(restored?.values[0]?.value).toBe(1);
  });

  it('compacts each session under its own policy when POLICY_OVERRIDES names it (or its tenant)', async () => {
    const s = await stage();
    const own = generateSession(34, { turns: 60, tenantId: 'over', sessionId: 'own' });
    const tenants = generateSession(35, { turns: 60, tenantId: 'over', sessionId: 'tenant' });
    const plain = generateSession(36, { turns: 60, tenantId: 'plain', sessionId: 'plain' });
    const overrides = { 'over/own': { l1EveryTurns: 10, digestFanIn: 2 }, over: { l1EveryTurns: 15 } };
    const expected = [
      [own, definePolicy({ l1EveryTurns: 10, digestFanIn: 2 })],
      [tenants, definePolicy({ l1EveryTurns: 15 })],
      [plain, definePolicy({ l1EveryTurns: 30 })],
    ] as const;
    const collected = await collectCompactions(s.bus);
    await runCompactor(s.config({ L1_EVERY_TURNS: '30', POLICY_OVERRIDES: JSON.stringify(overrides) }));
    for (const [turns] of expected) await s.publish(turns);
    const reference = expected.flatMap(([turns, policy]) => {
      const seqs = s.offsets.get(`${turns[0]!.tenantId}/${turns[0]!.sessionId}`)!;
      return runReference(turns, { policy, compactorVersion: version, offsetOf: (seq) => seqs.get(seq)! })
        .compactions;
    });
    await collected.waitFor(hasIds(reference.map((c) => c.compactionId)));
    const published = distinct(collected.all);
    expect([...published.keys()].sort()).toEqual(reference.map((c) => c.compactionId).sort());
    for (const c of reference) expect(canonicalJson(published.get(c.compactionId))).toBe(canonicalJson(c));
  });

  it('advances a batch of many sessions a few at a time (BATCH_SESSIONS) into the reference bytes', async () => {
    const s = await stage();
    const sessions = Array.from({ length: 6 }, (_, i) =>
      generateSession(40 + i, { turns: 70, tenantId: 'steps', sessionId: `s-${i}` }),
    );
    // Interleaved turn by turn, so that every batch holds all six sessions: three steps of two.
    const interleaved = sessions[0]!.flatMap((_, seq) => sessions.map((turns) => turns[seq]!));
    await s.publish(interleaved);
    const policy = definePolicy({ l1EveryTurns: 20, digestFanIn: 2 });
    const reference = sessions.flatMap((turns) => {
      const seqs = s.offsets.get(`${turns[0]!.tenantId}/${turns[0]!.sessionId}`)!;
      return runReference(turns, { policy, compactorVersion: version, offsetOf: (seq) => seqs.get(seq)! })
        .compactions;
    });
    const collected = await collectCompactions(s.bus);
    await runCompactor(s.config({ L1_EVERY_TURNS: '20', DIGEST_FAN_IN: '2', BATCH_SESSIONS: '2' }));
    await collected.waitFor(hasIds(reference.map((c) => c.compactionId)));
    const published = distinct(collected.all);
    expect([...published.keys()].sort()).toEqual(reference.map((c) => c.compactionId).sort());
    for (const c of reference) expect(canonicalJson(published.get(c.compactionId))).toBe(canonicalJson(c));
  });

  it('waits for the materializer: a span whose state is not applied yet is retried, never compacted on missing state', async () => {
    const s = await stage();
    const turns = generateSession(37, { turns: 80, sessionId: 'late-state' });
    const reference = runReference(turns, { policy: definePolicy(), compactorVersion: version });
    const collected = await collectCompactions(s.bus);
    await runCompactor(s.config({ STATE_WAIT_MS: '300' }));
    // On turns.l0, not yet in the projection: the batch fails (state unavailable) and is redelivered.
    await s.publish(turns, { apply: false });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(collected.all).toEqual([]);
    await s.projection.applyBatch(turns.map((turn) => ({ turn, partition: 0, offset: turn.seq - 1 })));
    await collected.waitFor(hasIds(reference.compactions.map((c) => c.compactionId)));
    expect(canonicalJson([...distinct(collected.all).values()])).toBe(canonicalJson(reference.compactions));
  });
});
