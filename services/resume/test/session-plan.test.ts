import {
  decideResume,
  definePolicy,
  generateSession,
  runReference,
  type MarkerDecision,
  type Policy,
} from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { applyDecisions, emptySessionState, type SessionPlanState } from '../src/session-plan.js';

const policies: readonly [string, Policy][] = [
  ['strict', definePolicy({ l1EveryTurns: 10, digestFanIn: 3 })],
  ['narrative (invalid markers and repairs)', definePolicy({ summarizer: 'narrative', l1EveryTurns: 10 })],
  ['narrative, deep', definePolicy({ summarizer: 'narrative', l1EveryTurns: 5, digestFanIn: 2 })],
];

function applyAll(
  state: SessionPlanState,
  decisions: readonly MarkerDecision[],
  firstOffset: number,
  batch: number,
): SessionPlanState {
  let current = state;
  for (let i = 0; i < decisions.length; i += batch) {
    const records = decisions
      .slice(i, i + batch)
      .map((decision, k) => ({ offset: firstOffset + i + k, decision }));
    current = applyDecisions(current, records).state;
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
          expect(state.frame).toEqual(run.frame);
          expect(state.plan).toEqual(
            decideResume({
              tenantId: first.tenantId,
              sessionId: first.sessionId,
              l0Partition: 2,
              frame: run.frame,
              decisions: run.decisions,
            }),
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
      // The frame after a decision: replay the reference's own frame moves up to here.
      const prefix = run.decisions.slice(0, index + 1);
      const expected = decideResume({
        tenantId,
        sessionId,
        l0Partition: 0,
        frame: state.frame,
        decisions: prefix,
      });
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
    expect(replayed.frame).toEqual(once.frame);
    expect(replayed.plan).toEqual(once.plan);
    expect(replayed.lastOffset).toBe(run.decisions.length + suffix.length - 1);
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
    expect(after.frame?.depth).toBe(2);
    expect(after.plan).toMatchObject({ mode: 'digest', marker: { depth: 2 } });
    // Only the invalidations, without the L2 node's own decision: raw, never the invalidated L1 marker.
    const onlyInvalidations = run.decisions
      .slice(firstDepthChange)
      .filter((d) => d.type === 'marker_invalid' && d.cause === 'depth_change');
    const stale = applyAll(before, onlyInvalidations, firstDepthChange, 100);
    expect(stale.plan?.mode).toBe('raw');
  });
});
