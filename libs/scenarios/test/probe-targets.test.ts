import {
  buildResumeContext,
  definePolicy,
  resumePlan,
  runReference,
  type Policy,
  type TurnEvent,
} from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { loadScenarios } from '../src/load.js';
import { answerProbe, compressionOf, probeQuestions } from '../src/probe.js';
import { generateWorkload } from '../src/workload.js';

// The targets of a digest a model can work from, on the pipeline's own reference: the strict
// summarizer's resume answers at least 95% of the probe at a compression of at most 0.25, on the report
// workload and on every demo session (where a session is too short for 0.25, the test says so).

function probed(turns: readonly TurnEvent[], policy: Policy) {
  const { tenantId, sessionId } = turns[0]!;
  const run = runReference(turns, { policy });
  const plan = resumePlan(run.state, { tenantId, sessionId, l0Partition: 0 });
  const nodeId = plan.mode === 'digest' ? plan.marker.compactionId : plan.checkpoint.compactionId;
  const node = run.compactions.find((c) => c.compactionId === nodeId) ?? null;
  const context = buildResumeContext({ plan, node, turns: turns.filter((t) => t.seq >= plan.rawFromSeq) });
  return {
    probe: answerProbe(probeQuestions(turns), context.messages),
    compression: compressionOf(context.messages, turns, plan.rawFromSeq, node !== null),
  };
}

describe('the probe targets of the strict summarizer', () => {
  it('answers at least 95% of the probe at a compression of at most 0.25 on the report workload', () => {
    const sessions = generateWorkload({ tenantId: 'probe', sessions: 12, turns: 200, seed: 1 });
    for (const turns of sessions) {
      const { probe, compression } = probed(turns, definePolicy());
      expect(probe.score, `${turns[0]!.sessionId} missed ${probe.missed.join(', ')}`).toBeGreaterThanOrEqual(
        0.95,
      );
      expect(compression).not.toBeNull();
      expect(compression!).toBeLessThanOrEqual(0.25);
    }
  });

  it('answers at least 95% of the probe on every demo session, under its own policy', () => {
    for (const scenario of loadScenarios()) {
      const { probe, compression } = probed(
        scenario.turns,
        definePolicy({ ...scenario.policy, summarizer: 'strict' }),
      );
      expect(probe.score, `${scenario.sessionId} missed ${probe.missed.join(', ')}`).toBeGreaterThanOrEqual(
        0.95,
      );
      // Too short for a compression of 0.25 is said, not hidden: the figure is printed by the report.
      if (compression !== null && compression > 0.25) {
        console.log(`${scenario.sessionId}: compression ${compression.toFixed(3)} (too short for 0.25)`);
      }
    }
  });
});
