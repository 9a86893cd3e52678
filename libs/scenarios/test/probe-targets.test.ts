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
import { compressionTarget, probeResume } from '../src/probe.js';
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
  return probeResume({
    turns,
    messages: context.messages,
    rawFromSeq: plan.rawFromSeq,
    hasNode: node !== null,
    narrativeBudget: policy.narrativeTokenBudget,
  });
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

  it('answers at least 95% of the probe on every demo session, at a compression of at most 0.25 where it is long enough', () => {
    const short: string[] = [];
    for (const scenario of loadScenarios()) {
      const { probe, compression, tooShort, coveredTokens } = probed(
        scenario.turns,
        definePolicy({ ...scenario.policy, summarizer: 'strict' }),
      );
      expect(probe.score, `${scenario.sessionId} missed ${probe.missed.join(', ')}`).toBeGreaterThanOrEqual(
        0.95,
      );
      expect(compression, scenario.sessionId).not.toBeNull();
      if (tooShort) short.push(`${scenario.sessionId} (${coveredTokens} raw tokens)`);
      else expect(compression!, scenario.sessionId).toBeLessThanOrEqual(compressionTarget);
    }
    // Too short for the target is said (the report prints it), and is the exception.
    console.log(`too short for ${compressionTarget}: ${short.join(', ') || 'none'}`);
    expect(short.length).toBeLessThanOrEqual(1);
  });
});
