import {
  definePolicy,
  generateSession,
  runReference,
  type BoundaryQuery,
  isVerdict,
  repairable,
} from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import type { ProjectionReader } from '../src/index.js';
import { harness, lines } from './harness.js';

// The validator against a lagging materializer: every compaction is published before a single turn is
// applied, then the turns trickle in. Whatever the interleaving, no marker is emitted on a boundary
// whose turns were not all applied when the validator read its state, and every verdict is the one the
// reference decides with all the state there (the wait is bounded; a boundary not reached is deferred).

describe('the validator racing a lagging materializer', () => {
  it('never emits a marker on state that had not been applied, and decides as if it always had been', async () => {
    const h = await harness({ WATERMARK_TIMEOUT_MS: '700' });
    const sessions = [601, 602, 603].map((seed) => {
      const turns = generateSession(seed, { tenantId: 'race', sessionId: `race-${seed}`, turns: 320 });
      return { turns, run: runReference(turns, { policy: definePolicy({ summarizer: 'narrative' }) }) };
    });

    // How far the test has applied each session (only ever after the projection acknowledged it), and
    // what that was whenever the validator read a boundary's state.
    const applied = new Map<string, number>();
    const reads: { sessionId: string; toSeq: number; appliedByTest: number; appliedSeq: number }[] = [];
    const watched: ProjectionReader = {
      waitForWatermark: (t, s, seq, ms) => h.projection.waitForWatermark(t, s, seq, ms),
      watermark: (t, s) => h.projection.watermark(t, s),
      async stateAt(query: BoundaryQuery) {
        const state = await h.projection.stateAt(query);
        reads.push({
          sessionId: query.sessionId,
          toSeq: query.toSeq,
          appliedByTest: applied.get(query.sessionId) ?? 0,
          appliedSeq: state.appliedSeq,
        });
        return state;
      },
    };
    await h.startValidator({ projection: watched });
    await h.publish(sessions.flatMap((s) => s.run.compactions));

    // The materializer lags: 20 turns per session every 60 ms (about a second per 320 turns... times 3).
    for (let from = 0; from < 320; from += 20) {
      for (const { turns } of sessions) {
        const chunk = turns.slice(from, from + 20);
        await h.apply(chunk);
        applied.set(chunk[0]!.sessionId, chunk.at(-1)!.seq);
      }
      await new Promise((resolve) => setTimeout(resolve, 60));
    }

    // Every first attempt gets a verdict, and every strict repair whose node's verdict asked for one.
    const all = sessions.flatMap((s) => s.run.compactions);
    const due = () => {
      const verdicts = new Map(h.markers.filter(isVerdict).map((d) => [d.compactionId, d]));
      return all.filter((c) => {
        if (c.repairOf === null) return true;
        const original = verdicts.get(c.repairOf);
        return original?.type === 'marker_invalid' && repairable(original);
      }).length;
    };
    const deadline = Date.now() + 30_000;
    while (h.markers.filter(isVerdict).length < due() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(h.markers.filter(isVerdict)).toHaveLength(due());

    let emitted = 0;
    let waitedThenEmitted = 0;
    for (const { run, turns } of sessions) {
      const { sessionId } = turns[0]!;
      // The verdicts do not depend on how far behind the materializer was: the reference's, byte for
      // byte, as if every turn had been applied before the first compaction.
      expect(lines(h.markersOf(sessionId))).toEqual(lines(run.decisions));
      for (const decision of h.markersOf(sessionId).filter((d) => d.type === 'marker_emitted')) {
        emitted++;
        // Emitted only after the validator read a state applied through the boundary (it may have read
        // the boundary before, optimistically, and found it behind).
        const usable = reads.filter(
          (r) =>
            r.sessionId === sessionId &&
            r.toSeq === decision.toSeq &&
            r.appliedSeq >= decision.toSeq &&
            r.appliedByTest >= decision.toSeq - 19,
        );
        expect(usable.length).toBeGreaterThan(0);
        const behind = reads.some(
          (r) => r.sessionId === sessionId && r.toSeq === decision.toSeq && r.appliedSeq < decision.toSeq,
        );
        if (behind) waitedThenEmitted++;
      }
    }
    // Nothing was applied when the compactions were published: markers were found behind, waited for,
    // and emitted once their state had arrived.
    expect(emitted).toBeGreaterThan(0);
    expect(waitedThenEmitted).toBeGreaterThan(0);
  });
});
