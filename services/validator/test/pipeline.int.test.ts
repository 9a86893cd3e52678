import {
  boundaryQuery,
  definePolicy,
  generateSession,
  runReference,
  type Compaction,
  type MarkerDecision,
  type ReferenceRun,
  type TurnEvent,
  decide,
  evolve,
  initialState,
  isVerdict,
} from '@tidemark/core';
import { FrameStore, sessionKeyOf } from '@tidemark/state';
import { createLogger, Registry } from '@tidemark/service';
import { describe, expect, it } from 'vitest';
import { decideBatch } from '../src/index.js';
import { validatorMetrics } from '../src/metrics.js';
import { harness, lines, type Harness } from './harness.js';

// The validator over generated sessions against the real stack: the reference's decisions byte for
// byte, whatever the delivery (duplicates, a lost frame store, a crash between record and publish).

interface Played {
  readonly turns: TurnEvent[];
  readonly run: ReferenceRun;
}

function play(seeds: readonly number[], summarizer: string, turns = 360): Played[] {
  return seeds.map((seed) => {
    const session = generateSession(seed, { tenantId: 'gen', sessionId: `${summarizer}-${seed}`, turns });
    return { turns: session, run: runReference(session, { policy: definePolicy({ summarizer }) }) };
  });
}

async function applyAll(h: Harness, played: readonly Played[]): Promise<void> {
  for (const { turns } of played) await h.apply(turns);
}

function expectReference(h: Harness, played: readonly Played[]): void {
  for (const { run, turns } of played) {
    expect(lines(h.markersOf(turns[0]!.sessionId))).toEqual(lines(run.decisions));
  }
}

const total = (played: readonly Played[]) => played.reduce((n, p) => n + p.run.decisions.length, 0);

describe('the validator over generated sessions', () => {
  it('publishes the reference decisions: under strict nothing fails but depth, under narrative every span with a disposition or an open item is invalid and names it', async () => {
    const h = await harness();
    const strict = play([101, 102], 'strict');
    const narrative = play([201, 202], 'narrative');
    const all = [...strict, ...narrative];
    await applyAll(h, all);
    await h.startValidator();
    await h.publish(all.flatMap((p) => p.run.compactions));
    await h.waitForMarkers(total(all));
    expectReference(h, all);

    for (const { turns } of strict) {
      const markers = h.markersOf(turns[0]!.sessionId);
      const conditions = markers.flatMap((m) => (m.type === 'marker_invalid' ? m.violations : []));
      expect(new Set(conditions.map((v) => v.condition))).toEqual(new Set(['depth']));
      // Every marker at the frame depth when it was decided is emitted.
      expect(markers.filter((m) => m.type === 'marker_emitted').length).toBeGreaterThan(0);
    }

    let named = 0;
    for (const { turns, run } of narrative) {
      const markers = h.markersOf(turns[0]!.sessionId);
      for (const node of run.compactions.filter((c) => c.attempt === 0)) {
        const state = run.fold.stateAt(boundaryQuery(node));
        // What the narrative summarizer loses: rejections and failures, and what is still in flight
        // (constraints survive, superseded dispositions too).
        const lost = [
          ...state.disposed.filter((d) => d.disposition !== 'superseded').map((d) => d.itemKey),
          ...state.open.filter((item) => item.kind !== 'constraint').map((item) => item.itemId),
        ];
        const verdict = markers.find((m) => m.markerId === node.marker.markerId && isVerdict(m))!;
        if (lost.length === 0) continue;
        named++;
        expect(verdict.type).toBe('marker_invalid');
        const ids = verdict.type === 'marker_invalid' ? verdict.violations.flatMap((v) => v.ids) : [];
        expect(ids).toEqual(expect.arrayContaining(lost));
      }
    }
    expect(named).toBeGreaterThan(5);
  });

  it('decides as one when two validators share the group (partitions split, rebalance mid-run)', async () => {
    const h = await harness();
    const played = play([151, 152, 153, 154], 'narrative', 280);
    await applyAll(h, played);
    await h.startValidator();
    const compactions = played.flatMap((p) => p.run.compactions);
    await h.publish(compactions.slice(0, Math.floor(compactions.length / 2)));
    await h.startValidator(); // joins: the group rebalances while the first is deciding
    await h.publish(compactions.slice(Math.floor(compactions.length / 2)));
    await h.waitForMarkers(total(played));
    await h.settled();
    expectReference(h, played);
  });

  it('yields one decision for a compaction delivered twice (same marker id, same bytes)', async () => {
    const h = await harness();
    const played = play([301], 'narrative', 240);
    const { compactions, decisions } = played[0]!.run;
    await applyAll(h, played);
    await h.startValidator();
    // Each compaction twice in a row, then the whole run again, then a sentinel session behind it.
    await h.publish(compactions.flatMap((c) => [c, c]));
    await h.publish(compactions);
    await h.waitForMarkers(decisions.length);
    await h.settled();
    expectReference(h, played);
  });

  it('rebuilds a lost frame store from the markers topic before deciding more, and goes on deciding as the reference', async () => {
    const h = await harness();
    const played = play([401, 402], 'narrative');
    await applyAll(h, played);
    const validator = await h.startValidator();
    const halves = played.map(({ run }) => split(run.compactions));
    await h.publish(halves.flatMap(([first]) => first));
    const firstHalf = played.map(({ run }, i) => prefixDecisions(run, halves[i]![0].length));
    await h.waitForMarkers(firstHalf.reduce((n, d) => n + d.length, 0));

    // Redis loses the validator's state (not the projection's).
    const keys = await h.redis.keys(`${h.prefix}frame*`);
    const decided = await h.redis.keys(`${h.prefix}decided*`);
    await h.redis.del(...keys, ...decided);
    expect(await validator.frames.epoch()).toBeNull();

    await h.publish(halves.flatMap(([, second]) => second));
    await h.waitForMarkers(total(played));
    expectReference(h, played);
    expect(await validator.frames.epoch()).not.toBeNull();
  });

  it('restores the frame of a session idle past STATE_RETENTION_MS from the markers topic when its next compaction arrives, deciding each compaction once, as the reference', async () => {
    const h = await harness({ STATE_RETENTION_MS: '1500' });
    const played = play([451, 452], 'narrative');
    await applyAll(h, played);
    const metrics = new Registry();
    await h.startValidator({ metrics });
    const halves = played.map(({ run }) => split(run.compactions));
    await h.publish(halves.flatMap(([first]) => first));
    const firstHalf = played.map(({ run }, i) => prefixDecisions(run, halves[i]![0].length));
    await h.waitForMarkers(firstHalf.reduce((n, d) => n + d.length, 0));

    // Idle past the retention: frames and decided records expire; only the sessions' seen marks stay.
    const stateKeys = async () => [
      ...(await h.redis.keys(`${h.prefix}frame:{*`)),
      ...(await h.redis.keys(`${h.prefix}decided:{*`)),
    ];
    expect(await stateKeys()).toHaveLength(4);
    const deadline = Date.now() + 15_000;
    while ((await stateKeys()).length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await stateKeys()).toEqual([]);
    expect(await h.redis.keys(`${h.prefix}frame-seen:{*`)).toHaveLength(2);

    // Redelivered first halves (already decided) and the second halves: every compaction decided once.
    await h.publish(played.flatMap(({ run }) => run.compactions));
    await h.waitForMarkers(total(played));
    await h.settled();
    expectReference(h, played);
    const restored = await metrics.getSingleMetric('tidemark_validator_restored_sessions_total')?.get();
    expect(restored?.values[0]?.value).toBe(2);
  });

  it('re-publishes the recorded bytes after a crash between record and publish, even when deciding again would differ', async () => {
    const h = await harness();
    const played = play([501], 'strict', 200);
    const { turns, run } = played[0]!;
    const first = run.compactions[0]!;
    const frames = new FrameStore(h.redis, { prefix: h.prefix });
    await frames.restore('before-crash', []);

    // A validator decides the first compaction on its complete state (emitted), records it, and dies
    // before its publish reaches the broker.
    await applyAll(h, played);
    const crashed = decideBatch(
      {
        frames,
        projection: h.projection,
        publish: () => Promise.reject(new Error('SIGKILL')),
        rebuild: () => Promise.resolve(),
        metrics: validatorMetrics(new Registry()),
        logger: createLogger('validator', 'silent'),
        watermarkTimeoutMs: 50,
      },
      [{ node: first, appendedAt: null }],
    );
    await expect(crashed).rejects.toThrow('SIGKILL');

    // Meanwhile the session breaks at its first turn (a conflicting redelivery, say): decided again, the
    // first compaction would be unverifiable. The restarted validator gets it again and re-publishes
    // what it recorded; everything after it is decided on the broken session.
    await h.projection.markBroken(first.tenantId, first.sessionId, 1, 'conflicting_redelivery');
    await h.startValidator();
    await h.publish(run.compactions);
    const expected = replayWith(run, (node, state) =>
      node.compactionId === first.compactionId ? state : { ...state, appliedSeq: 0 },
    );
    await h.waitForMarkers(expected.length);
    expect(lines(h.markersOf(turns[0]!.sessionId))).toEqual(lines(expected));
    expect(h.markers[0]).toMatchObject({ type: 'marker_emitted', markerId: first.marker.markerId });
    const loaded = await frames.load([{ ...first, compactionIds: [first.compactionId] }]);
    expect(loaded.ok && loaded.sessions.get(sessionKeyOf(first))?.decided.get(first.compactionId)).toEqual({
      status: 'published',
    });
  });

  it('re-publishes the same bytes after a crash between publish and confirm (a duplicate consumers dedupe), and nothing else', async () => {
    const h = await harness();
    const played = play([701], 'narrative', 200);
    await applyAll(h, played);
    const { turns, run } = played[0]!;
    const frames = new FrameStore(h.redis, { prefix: h.prefix });
    await frames.restore('before-crash', []);
    const first = run.compactions.slice(0, 2);

    // The decisions reach the broker; the validator dies before it marks them published (the
    // confirmation is not waited for: the batch returns, and the store keeps them pending).
    const crashed = decideBatch(
      {
        frames: {
          load: (sessions) => frames.load(sessions),
          record: (epoch, writes) => frames.record(epoch, writes),
          confirm: () => Promise.reject(new Error('SIGKILL')),
        },
        projection: h.projection,
        publish: (decisions) => h.producer.send('markers', decisions),
        rebuild: () => Promise.resolve(),
        metrics: validatorMetrics(new Registry()),
        logger: createLogger('validator', 'silent'),
        watermarkTimeoutMs: 1000,
      },
      first.map((node) => ({ node, appendedAt: null })),
    );
    await expect(crashed).resolves.toMatchObject({ decided: 2 });
    const pending = await frames.load([{ ...first[0]!, compactionIds: [first[0]!.compactionId] }]);
    expect(
      pending.ok && pending.sessions.get(sessionKeyOf(first[0]!))?.decided.get(first[0]!.compactionId),
    ).toMatchObject({
      status: 'pending',
    });
    const before = await h.waitForMarkers(prefixDecisions(run, 2).length);

    await h.startValidator();
    await h.publish(run.compactions);
    await h.waitForMarkers(before.length + run.decisions.length);
    await h.settled();
    const seen = h.markersOf(turns[0]!.sessionId);
    // The first two compactions' decisions twice, byte for byte; then the rest, once.
    expect(lines(seen)).toEqual([...lines(before), ...lines(run.decisions)]);
    const deduped = [...new Set(lines(seen))];
    expect(deduped).toEqual(lines(run.decisions));
  });
});

function split(compactions: readonly Compaction[]): [Compaction[], Compaction[]] {
  const half = Math.floor(compactions.length / 2);
  return [compactions.slice(0, half), compactions.slice(half)];
}

/** The reference's decisions for the first `count` compactions of a run (repairs follow their node). */
function prefixDecisions(run: ReferenceRun, count: number): MarkerDecision[] {
  let seen = 0;
  const out: MarkerDecision[] = [];
  for (const decision of run.decisions) {
    out.push(decision);
    if (isVerdict(decision)) seen++;
    if (seen === count) break;
  }
  return out;
}

/** The decisions of a run's compactions decided in order, with the state of some boundaries altered. */
function replayWith(
  run: ReferenceRun,
  alter: (
    node: Compaction,
    state: ReturnType<ReferenceRun['fold']['stateAt']>,
  ) => ReturnType<ReferenceRun['fold']['stateAt']>,
): MarkerDecision[] {
  let state = initialState;
  const out: MarkerDecision[] = [];
  for (const node of run.compactions) {
    const decisions = decide({ node, state: alter(node, run.fold.stateAt(boundaryQuery(node))) }, state);
    out.push(...decisions);
    state = decisions.reduce(evolve, state);
  }
  return out;
}
