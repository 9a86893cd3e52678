import {
  boundaryQuery,
  canonicalJson,
  definePolicy,
  generateSession,
  runReference,
  trustedMarkers,
  type Policy,
} from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideCompaction,
  emptyFrameState,
  missingState,
  replayDecisions,
  trustAfter,
  type FrameState,
} from '../src/decide.js';

// The validator's pure step against the reference pipeline: fed the reference's compactions in order,
// with the state at each boundary, it publishes the reference's decisions byte for byte while keeping
// only the frame and the trusted markers.

const policies: Record<string, Policy> = {
  strict: definePolicy(),
  narrative: definePolicy({ summarizer: 'narrative' }),
  deep: definePolicy({ digestFanIn: 2, maxDepth: 4, summarizer: 'narrative' }),
  tight: definePolicy({ digestFanIn: 8, digestTokenBudget: 900, maxDepth: 3 }),
};

function replay(seed: number, turns: number, policy: Policy) {
  const session = generateSession(seed, { turns });
  const run = runReference(session, { policy });
  let state: FrameState = emptyFrameState;
  const published = [];
  for (const node of run.compactions) {
    const step = decideCompaction(state, node, run.fold.stateAt(boundaryQuery(node)));
    published.push(...step.decisions);
    state = step.next;
  }
  return { run, published, state };
}

describe('the validator step', () => {
  for (const [name, policy] of Object.entries(policies)) {
    it(`publishes the reference decisions byte for byte (${name})`, () => {
      const { run, published, state } = replay(11, 700, policy);
      expect(run.decisions.length).toBeGreaterThan(10);
      expect(canonicalJson(published)).toBe(canonicalJson(run.decisions));
      expect(state.frame).toEqual(run.frame);
      expect(state.trusted).toEqual(trustedMarkers(run.decisions));
    });
  }

  it('keeps the frame state of the reference for any seed and policy', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 60, max: 400 }),
        fc.constantFrom(...Object.values(policies)),
        (seed, turns, policy) => {
          const { run, published, state } = replay(seed, turns, policy);
          expect(canonicalJson(published)).toBe(canonicalJson(run.decisions));
          // Rebuilding from the published decisions alone gives the same frame state.
          expect(replayDecisions(emptyFrameState, published)).toEqual(state);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('keeps trust in the order of core trustedMarkers', () => {
    const { run } = replay(3, 500, policies.deep!);
    expect(trustAfter([], run.decisions)).toEqual(trustedMarkers(run.decisions));
  });

  it('decides unverifiable, never emitted, on a boundary the state does not cover', () => {
    const { run } = replay(5, 200, policies.strict!);
    const node = run.compactions[0]!;
    const step = decideCompaction(emptyFrameState, node, missingState(node, node.span.toSeq - 3));
    expect(step.decisions).toHaveLength(1);
    const decision = step.decisions[0]!;
    expect(decision.type).toBe('marker_invalid');
    expect(decision.type === 'marker_invalid' && decision.violations.map((v) => v.condition)).toEqual([
      'unverifiable',
    ]);
    expect(step.next.trusted).toEqual([]);
  });
});
