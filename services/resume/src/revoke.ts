import {
  isRevoked,
  revocationIdOf,
  type MarkerRevocation,
  type ResumePlan,
  type SessionFrameState,
} from '@tidemark/core';
import type { SessionRef } from '@tidemark/state';
import { ResumeUnavailableError } from './outcomes.js';
import type { SessionPlanState } from './session-plan.js';

// Undo a compaction: an operator revokes a marker the session trusts. Nothing here changes stored state:
// the request is published to the revocations topic, the validator decides it on its own frames (one
// MarkerInvalid with cause revoked, on the markers topic), and the resume worker folds that decision like
// any other. So a revocation is audited and replayed with everything else; this module only checks the
// request against what the session trusts, and waits, bounded, for the decision to be folded.

export type RevokeStatus = 'revoked' | 'already_revoked' | 'pending';

export type RevokeOutcome =
  | {
      readonly ok: true;
      readonly body: {
        /** revoked: decided and folded; already_revoked: nothing new; pending: published, not folded yet. */
        readonly status: RevokeStatus;
        readonly revocationId: string;
        readonly markerId: string;
        /** The session's resume plan after the revocation (null while pending). */
        readonly plan: ResumePlan | null;
      };
    }
  | {
      readonly ok: false;
      readonly code: 'session_not_found' | 'marker_not_trusted';
      readonly message: string;
    };

export interface RevokerDeps {
  /** The worker's state of a session (ExpiredPlans.sessionState). */
  readonly sessionState: (ref: SessionRef) => Promise<SessionPlanState | null | 'rebuilding'>;
  /** Publishes a revocation to the revocations topic, durably. */
  readonly publish: (revocation: MarkerRevocation) => Promise<void>;
  /** How long to wait for the decision to be folded before answering pending. */
  readonly waitMs: number;
  readonly pollMs?: number;
}

export function createRevoker(deps: RevokerDeps) {
  const frames = async (ref: SessionRef): Promise<SessionPlanState | null> => {
    const state = await deps.sessionState(ref);
    if (state === 'rebuilding') {
      // The caller answers 503 and the operator retries, as for any resume while the store is rebuilt.
      throw new ResumeUnavailableError('the resume store is being rebuilt', { cause: state });
    }
    return state;
  };
  const answer = (
    status: RevokeStatus,
    revocation: { revocationId: string; markerId: string },
    state: SessionPlanState | null,
  ): RevokeOutcome => ({
    ok: true,
    body: { status, ...revocation, plan: status === 'pending' ? null : (state?.plan ?? null) },
  });

  return {
    async revoke(
      ref: SessionRef,
      markerId: string,
      request: { readonly reason: string; readonly requestedBy: string },
    ): Promise<RevokeOutcome> {
      const ids = { revocationId: revocationIdOf({ ...ref, markerId }), markerId };
      const state = await frames(ref);
      if (state === null) return { ok: false, code: 'session_not_found', message: 'no such session' };
      if (isRevoked(state.frames, markerId)) return answer('already_revoked', ids, state);
      if (!trusts(state.frames, markerId)) {
        return {
          ok: false,
          code: 'marker_not_trusted',
          message:
            'the session does not trust this marker (never emitted, or invalidated since): nothing to revoke',
        };
      }
      await deps.publish({ ...ids, ...ref, reason: request.reason, requestedBy: request.requestedBy });
      const deadline = Date.now() + deps.waitMs;
      for (;;) {
        const now = await frames(ref);
        if (now !== null && isRevoked(now.frames, markerId)) return answer('revoked', ids, now);
        // Invalidated meanwhile by another decision (a depth change): the validator decides nothing more.
        if (now !== null && !trusts(now.frames, markerId)) {
          return { ok: false, code: 'marker_not_trusted', message: 'the marker was invalidated meanwhile' };
        }
        if (Date.now() >= deadline) return answer('pending', ids, null);
        await new Promise((resolve) => setTimeout(resolve, deps.pollMs ?? 100));
      }
    },
  };
}

export type Revoker = ReturnType<typeof createRevoker>;

function trusts(state: SessionFrameState, markerId: string): boolean {
  return state.generations.some((g) => g.trusted.some((m) => m.markerId === markerId));
}
