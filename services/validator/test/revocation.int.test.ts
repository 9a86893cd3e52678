import {
  definePolicy,
  generateSession,
  resumePlan,
  revocationIdOf,
  runReference,
  type MarkerDecision,
  type MarkerRevocation,
} from '@tidemark/core';
import { FrameStore } from '@tidemark/state';
import { describe, expect, it } from 'vitest';
import { harness, lines } from './harness.js';

// An operator's revocation through the validator's decision path, on the real stack: one MarkerInvalid
// with cause revoked on the markers topic, written ahead in the frame store like any decision, so a
// repeated revocation, a redelivery, a lost frame store and a republished compaction never trust the
// marker again.

const turns = generateSession(31, { tenantId: 'ops', sessionId: 'revoked-1', turns: 170 });
const run = runReference(turns, { policy: definePolicy({ summarizer: 'strict' }) });
const { tenantId, sessionId } = turns[0]!;
const l0Partition = run.compactions[0]!.span.l0Partition;

function framingMarkerId(): string {
  const plan = resumePlan(run.state, { tenantId, sessionId, l0Partition });
  if (plan.mode !== 'digest') throw new Error('the strict reference run resumes in digest mode');
  return plan.marker.markerId;
}

function revocation(markerId: string, reason: string): MarkerRevocation {
  return {
    revocationId: revocationIdOf({ tenantId, sessionId, markerId }),
    tenantId,
    sessionId,
    markerId,
    reason,
    requestedBy: 'operator:00112233aabbccdd',
  };
}

const revokedDecisions = (markers: readonly MarkerDecision[]) =>
  markers.filter((m) => m.type === 'marker_invalid' && m.cause === 'revoked');

describe('revoking a marker', () => {
  it('publishes one MarkerInvalid with cause revoked, and a repeated, redelivered or rebuilt revocation adds nothing', async () => {
    const h = await harness();
    await h.apply(turns);
    await h.startValidator();
    await h.publish(run.compactions);
    await h.waitForMarkers(run.decisions.length);
    expect(lines(h.markers)).toEqual(lines(run.decisions));

    const markerId = framingMarkerId();
    await h.revoke([revocation(markerId, 'the digest lost the rollback plan')]);
    const after = await h.waitForMarkers(run.decisions.length + 1);
    const revoked = after.at(-1)!;
    expect(revoked).toMatchObject({
      type: 'marker_invalid',
      cause: 'revoked',
      markerId,
      violations: [
        {
          condition: 'revoked',
          ids: [markerId],
          detail: `${markerId}: revoked by operator:00112233aabbccdd: the digest lost the rollback plan`,
        },
      ],
    });
    // The frame store folded it: the session now resumes from the raw checkpoint.
    const frames = new FrameStore(h.redis, { prefix: h.prefix });
    const loaded = await frames.load([{ tenantId, sessionId, compactionIds: [] }]);
    if (!loaded.ok) throw new Error('the frame store has an epoch');
    const state = [...loaded.sessions.values()][0]!.frame.state;
    expect(resumePlan(state, { tenantId, sessionId, l0Partition })).toMatchObject({
      mode: 'raw',
      reason: 'newest_revoked',
    });

    // The same marker again (another reason), the same request twice, and the session's compactions
    // republished (a replay under the same generation): no new decision.
    await h.revoke([revocation(markerId, 'again'), revocation(markerId, 'and again')]);
    await h.publish(run.compactions);
    await h.settled();
    expect(revokedDecisions(h.markers)).toHaveLength(1);
    expect(h.markers).toHaveLength(run.decisions.length + 1);

    // The frame store lost (Redis flushed): the validator rebuilds it from the markers topic, and the
    // marker stays revoked.
    const keys = await h.redis.keys(`${h.prefix}*`);
    if (keys.length > 0) await h.redis.del(...keys);
    await h.revoke([revocation(markerId, 'after the loss')]);
    await h.publish(run.compactions.slice(-2));
    await h.settled();
    expect(revokedDecisions(h.markers)).toHaveLength(1);
    expect(h.markers).toHaveLength(run.decisions.length + 1);
  });

  it('decides nothing for a marker that was never trusted', async () => {
    const h = await harness();
    await h.apply(turns);
    await h.startValidator();
    await h.publish(run.compactions);
    await h.waitForMarkers(run.decisions.length);
    const invalid = run.decisions.find((d) => d.type === 'marker_invalid')!;
    await h.revoke([
      revocation(invalid.markerId, 'not trusted anyway'),
      revocation('f'.repeat(64), 'unknown'),
    ]);
    await h.settled();
    expect(h.markers).toHaveLength(run.decisions.length);
  });
});
