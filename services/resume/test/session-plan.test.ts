import {
  definePolicy,
  foldDecisions,
  frameOf,
  generateSession,
  resumePlan,
  runReference,
  type MarkerDecision,
  type Policy,
} from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDecisions, emptySessionState, type SessionPlanState } from '../src/session-plan.js';

const policies: readonly [string, Policy][] = [
  ['strict', definePolicy({ l1EveryTurns: 10, digestFanIn: 3 })],
  ['narrative (invalid markers and repairs)', definePolicy({ summarizer: 'narrative', l1EveryTurns: 10 })],
  ['narrative, deep', definePolicy({ summarizer: 'narrative', l1EveryTurns: 5, digestFanIn: 2 })],
];

/** The decisions applied in batches; `stored`: the state stored as JSON and loaded again between batches. */
function applyAll(
  state: SessionPlanState,
  decisions: readonly MarkerDecision[],
  firstOffset: number,
  batch: number,
  stored = false,
): SessionPlanState {
  let current = state;
  for (let i = 0; i < decisions.length; i += batch) {
    const records = decisions
      .slice(i, i + batch)
      .map((decision, k) => ({ offset: firstOffset + i + k, decision }));
    current = applyDecisions(current, records).state;
    if (stored) current = JSON.parse(JSON.stringify(current)) as SessionPlanState;
  }
  return current;
}

describe('the per-session plan state', () => {
  for (const [name, policy] of policies) {
    for (const seed of [1, 7, 42]) {
      it(`derives the validator's frame and core's plan from the decisions alone (${name}, seed ${seed})`, () => {
        const turns = generateSession(seed, { turns: 120 });
        const run = runReference(turns, { policy, l0Partition: 2 });
        const first = turns[0]!;
        for (const batch of [1, 3, 1000]) {
          const state = applyAll(emptySessionState(first.tenantId, first.sessionId), run.decisions, 0, batch);
          expect(frameOf(state.frames)).toEqual(run.frame);
          expect(state.frames).toEqual(run.state);
          expect(state.l0Partition).toBe(2);
          expect(state.plan).toEqual(
            resumePlan(run.state, { tenantId: first.tenantId, sessionId: first.sessionId, l0Partition: 2 }),
          );
        }
      });
    }
  }

  it('tracks the plan after every decision, not only at the end', () => {
    const turns = generateSession(3, { turns: 100 });
    const run = runReference(turns, { policy: policies[2]![1], l0Partition: 0 });
    const { tenantId, sessionId } = turns[0]!;
    let state = emptySessionState(tenantId, sessionId);
    const modes = new Set<string>();
    run.decisions.forEach((decision, index) => {
      state = applyDecisions(state, [{ offset: index, decision }]).state;
      // The plan after a decision: core's decider over the decisions up to here.
      const prefix = run.decisions.slice(0, index + 1);
      const expected = resumePlan(foldDecisions(prefix), { tenantId, sessionId, l0Partition: 0 });
      expect(state.plan).toEqual(expected);
      modes.add(state.plan!.mode);
    });
    expect(modes).toEqual(new Set(['digest', 'raw']));
  });

  it('skips redelivered offsets and ignores a validator re-publishing a suffix after a crash', () => {
    const turns = generateSession(11, { turns: 120 });
    const run = runReference(turns, { policy: policies[1]![1] });
    const { tenantId, sessionId } = turns[0]!;
    const once = applyAll(emptySessionState(tenantId, sessionId), run.decisions, 0, 4);
    // The same records again (a redelivered batch): nothing changes.
    const redelivered = applyAll(once, run.decisions, 0, 4);
    expect(redelivered).toBe(once);
    // The validator re-published its last decisions at new offsets: same frame, same plan.
    const suffix = run.decisions.slice(-7);
    const replayed = applyAll(once, suffix, run.decisions.length, 2);
    expect(replayed.frames).toEqual(once.frames);
    expect(replayed.plan).toEqual(once.plan);
    expect(replayed.lastOffset).toBe(run.decisions.length + suffix.length - 1);
  });

  it('leaves the plan byte-identical when markers records are redelivered and duplicated at later offsets', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.constantFrom(...policies.map(([, policy]) => policy)),
        fc.integer({ min: 1, max: 8 }),
        fc.nat(),
        fc.nat(),
        (seed, policy, batch, cutAt, rewindAt) => {
          // given a session's decisions, as the validator published them once
          const turns = generateSession(seed, { turns: 90 });
          const run = runReference(turns, { policy, l0Partition: 1 });
          const { tenantId, sessionId } = turns[0]!;
          const decisions = run.decisions;
          const empty = emptySessionState(tenantId, sessionId);
          const once = applyAll(empty, decisions, 0, batch);
          const plan = JSON.stringify(once.plan);
          expect(once.plan).toEqual(resumePlan(run.state, { tenantId, sessionId, l0Partition: 1 }));

          // when a validator crashed after publishing decisions[0..cut] and re-published from rewind on,
          // at later offsets, and a consumer redelivered records it had applied (the same offsets again),
          // the worker's state stored and loaded between batches
          const cut = cutAt % decisions.length;
          const rewind = rewindAt % (cut + 1);
          let state = applyAll(empty, decisions.slice(0, cut + 1), 0, batch, true);
          const atCut = JSON.stringify(state.plan);
          state = applyAll(state, decisions.slice(0, cut + 1), 0, batch, true);
          state = applyAll(state, decisions.slice(rewind, cut + 1), cut + 1, batch, true);
          expect(JSON.stringify(state.plan)).toBe(atCut);
          const offset = state.lastOffset + 1;
          state = applyAll(state, decisions.slice(cut + 1), offset, batch, true);
          // then the plan is the one of the decisions published once, byte for byte
          expect(JSON.stringify(state.plan)).toBe(plan);
          expect(state.frames).toEqual(once.frames);
          expect(state.decidedL1ToSeq).toBe(once.decidedL1ToSeq);

          // and so it is when every record is duplicated right after itself
          const doubled = applyAll(
            empty,
            decisions.flatMap((d) => [d, d]),
            0,
            batch,
          );
          expect(JSON.stringify(doubled.plan)).toBe(plan);
          expect(doubled.frames).toEqual(once.frames);
          expect(doubled.lastOffset).toBe(2 * decisions.length - 1);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('skips another session’s decisions, moving only the offset', () => {
    const turns = generateSession(2, { turns: 30 });
    const run = runReference(turns, { policy: policies[0]![1] });
    const { tenantId, sessionId } = turns[0]!;
    const state = applyAll(emptySessionState(tenantId, sessionId), run.decisions, 0, 100);
    const foreign = { ...run.decisions.at(-1)!, sessionId: `${sessionId}-other`, toSeq: 1000, depth: 1 };
    const next = applyDecisions(state, [{ offset: run.decisions.length, decision: foreign }]);
    expect(next.changed).toBe(true);
    expect(next.state).toEqual({ ...state, lastOffset: run.decisions.length });
    // Only another session's decisions: no plan yet.
    const none = applyDecisions(emptySessionState(tenantId, 'nobody'), [{ offset: 0, decision: foreign }]);
    expect(none).toEqual({
      changed: true,
      state: { ...emptySessionState(tenantId, 'nobody'), lastOffset: 0 },
    });
  });

  it('keeps a repair ahead of the invalid node it repairs when that node is decided again', () => {
    const turns = generateSession(11, { turns: 40 });
    const run = runReference(turns, { policy: definePolicy({ summarizer: 'narrative', l1EveryTurns: 10 }) });
    const { tenantId, sessionId } = turns[0]!;
    const repaired = run.decisions.findIndex(
      (d, i) => d.type === 'marker_invalid' && run.decisions[i + 1]?.toSeq === d.toSeq,
    );
    expect(repaired).toBeGreaterThanOrEqual(0);
    const decisions = run.decisions.slice(0, repaired + 2);
    const state = applyAll(emptySessionState(tenantId, sessionId), decisions, 0, 100);
    expect(state.plan).toMatchObject({
      mode: 'digest',
      marker: { markerId: decisions[repaired + 1]!.markerId },
    });
    // The invalid node's decision again (a re-published duplicate): same toSeq, so order would decide.
    const again = applyDecisions(state, [{ offset: 1000, decision: decisions[repaired]! }]).state;
    expect(again.plan).toEqual(state.plan);
  });

  it('moves the plan off a marker that a depth change invalidated', () => {
    // Depth 1 until the first digest: the L2 frame invalidates every L1 marker.
    const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 2 });
    const turns = generateSession(5, { turns: 20 });
    const run = runReference(turns, { policy });
    const { tenantId, sessionId } = turns[0]!;
    const firstDepthChange = run.decisions.findIndex(
      (d) => d.type === 'marker_invalid' && d.cause === 'depth_change',
    );
    expect(firstDepthChange).toBeGreaterThan(0);
    const before = applyAll(
      emptySessionState(tenantId, sessionId),
      run.decisions.slice(0, firstDepthChange),
      0,
      100,
    );
    expect(before.plan).toMatchObject({ mode: 'digest', marker: { depth: 1 } });
    const after = applyAll(before, run.decisions.slice(firstDepthChange), firstDepthChange, 100);
    expect(frameOf(after.frames)?.depth).toBe(2);
    expect(after.plan).toMatchObject({ mode: 'digest', marker: { depth: 2 } });
    // Only the invalidations, without the L2 node's own decision: raw, never the invalidated L1 marker.
    const onlyInvalidations = run.decisions
      .slice(firstDepthChange)
      .filter((d) => d.type === 'marker_invalid' && d.cause === 'depth_change');
    const stale = applyAll(before, onlyInvalidations, firstDepthChange, 100);
    expect(stale.plan?.mode).toBe('raw');
  });
});
