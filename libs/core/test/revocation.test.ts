import { describe, expect, it } from 'vitest';
import {
  decideRevocation,
  definePolicy,
  evolve,
  foldDecisions,
  generateSession,
  isRevoked,
  resumePlan,
  revocationIdOf,
  runReference,
  trustedMarkers,
  type MarkerEmitted,
  type MarkerRevocation,
  type SessionFrameState,
} from '../src/index.js';

// An operator's revocation is a command of the session decider like a compaction: it becomes one
// MarkerInvalid (cause revoked) for a trusted marker, nothing otherwise, and the fold never trusts the
// marker again — not on a redelivery of its emission, not on a second revocation.

const turns = generateSession(7, { turns: 130, activity: 0.8 });
const run = runReference(turns, { policy: definePolicy({ l1EveryTurns: 20 }), maxRepairs: 1 });
const session = { tenantId: run.compactions[0]!.tenantId, sessionId: run.compactions[0]!.sessionId };
const l0Partition = run.compactions[0]!.span.l0Partition;

function revocation(markerId: string, reason = 'the digest dropped the rollback plan'): MarkerRevocation {
  return {
    revocationId: revocationIdOf({ ...session, markerId }),
    ...session,
    markerId,
    reason,
    requestedBy: 'operator:0123456789abcdef',
  };
}

/** The marker that frames the session: a digest-mode resume starts from it. */
function framingMarker(state: SessionFrameState): MarkerEmitted {
  const plan = resumePlan(state, { ...session, l0Partition });
  if (plan.mode !== 'digest') throw new Error('the reference run should resume in digest mode');
  return trustedMarkers(state).find((m) => m.markerId === plan.marker.markerId)!;
}

describe('decideRevocation', () => {
  const framing = framingMarker(run.state);

  it('invalidates a trusted marker with cause revoked, naming it, who asked and why', () => {
    const [decision, ...rest] = decideRevocation({ revocation: revocation(framing.markerId) }, run.state);
    expect(rest).toEqual([]);
    expect(decision).toMatchObject({
      type: 'marker_invalid',
      cause: 'revoked',
      markerId: framing.markerId,
      compactionId: framing.compactionId,
      toSeq: framing.toSeq,
      violations: [
        {
          condition: 'revoked',
          ids: [framing.markerId],
          detail: `${framing.markerId}: revoked by operator:0123456789abcdef: the digest dropped the rollback plan`,
        },
      ],
    });
    // The fallback is the newest other trusted marker at the frame's depth, never the revoked one.
    if (decision?.type !== 'marker_invalid') throw new Error('expected an invalid decision');
    expect(decision.fallback.markerId).not.toBe(framing.markerId);
  });

  it('turns the resume to raw mode from the checkpoint, with reason newest_revoked', () => {
    const decisions = decideRevocation({ revocation: revocation(framing.markerId) }, run.state);
    const after = decisions.reduce(evolve, run.state);
    const plan = resumePlan(after, { ...session, l0Partition });
    expect(plan).toMatchObject({ mode: 'raw', reason: 'newest_revoked' });
    expect(isRevoked(after, framing.markerId)).toBe(true);
    expect(trustedMarkers(after).map((m) => m.markerId)).not.toContain(framing.markerId);
    if (plan.mode !== 'raw' || decisions[0]?.type !== 'marker_invalid') throw new Error('expected raw');
    expect(plan.checkpoint).toEqual(decisions[0].fallback);
  });

  it('decides nothing for a marker revoked already, unknown, or not trusted', () => {
    const after = decideRevocation({ revocation: revocation(framing.markerId) }, run.state).reduce(
      evolve,
      run.state,
    );
    expect(decideRevocation({ revocation: revocation(framing.markerId, 'again') }, after)).toEqual([]);
    expect(decideRevocation({ revocation: revocation('f'.repeat(64)) }, run.state)).toEqual([]);
    const invalid = run.decisions.find((d) => d.type === 'marker_invalid' && d.cause === 'check');
    expect(invalid).toBeDefined();
    expect(trustedMarkers(run.state).map((m) => m.markerId)).not.toContain(invalid!.markerId);
    expect(decideRevocation({ revocation: revocation(invalid!.markerId) }, run.state)).toEqual([]);
  });

  it('never trusts a revoked marker again: not when its emission is folded again, nor on a rebuild', () => {
    const [revoked] = decideRevocation({ revocation: revocation(framing.markerId) }, run.state);
    const emission = run.decisions.find(
      (d) => d.type === 'marker_emitted' && d.markerId === framing.markerId,
    )!;
    const redelivered = [...run.decisions, revoked!, emission, revoked!];
    const rebuilt = foldDecisions(redelivered);
    expect(trustedMarkers(rebuilt).map((m) => m.markerId)).not.toContain(framing.markerId);
    expect(rebuilt).toEqual(foldDecisions([...run.decisions, revoked!]));
  });

  it('derives one id per session and marker, whatever the reason or the operator', () => {
    const a = revocationIdOf({ ...session, markerId: framing.markerId });
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(revocationIdOf({ ...session, markerId: framing.markerId })).toBe(a);
    expect(revocationIdOf({ ...session, sessionId: 'other', markerId: framing.markerId })).not.toBe(a);
  });
});
