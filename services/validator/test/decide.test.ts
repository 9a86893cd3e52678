import {
  decide,
  definePolicy,
  generateSession,
  initialState,
  runReference,
  trustedMarkers,
  evolve,
} from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { missingState } from '../src/decide.js';

// What the validator decides on when the projection cannot answer for a boundary. (The decisions
// themselves are core's session decider, tested against the reference in libs/core.)

describe('a boundary the state does not cover', () => {
  it('is decided unverifiable, never emitted, and asks for no repair', () => {
    const run = runReference(generateSession(5, { turns: 200 }), { policy: definePolicy() });
    const node = run.compactions[0]!;
    const decisions = decide({ node, state: missingState(node, node.span.toSeq - 3) }, initialState);
    expect(decisions).toHaveLength(1);
    const decision = decisions[0]!;
    expect(decision.type).toBe('marker_invalid');
    expect(decision.type === 'marker_invalid' && decision.violations.map((v) => v.condition)).toEqual([
      'unverifiable',
    ]);
    const state = decisions.reduce(evolve, initialState);
    expect(trustedMarkers(state)).toEqual([]);
    expect(state.generations[0]!.repairWanted).toBeNull();
  });
});
