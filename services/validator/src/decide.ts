import {
  advanceFrame,
  decideMarker,
  invalidationsForFrame,
  type CheckOptions,
  type Compaction,
  type Frame,
  type MarkerDecision,
  type MarkerEmitted,
  type StateAtBoundary,
} from '@tidemark/core';

// The validator's decisions, as a pure step over one session's frame state: the service around it only
// loads that state, reads the boundary state and publishes. Everything here is core; this file only
// keeps the frame state small.
//
// Why `trusted` instead of the whole decision history: the core reads a session's history through
// `trustedMarkers` alone (latest decision per marker, kept if emitted, in the order of that latest
// decision) — `invalidationsForFrame`, `rawCheckpoint` and so `decideMarker` give the same answers for
// the history and for its trusted markers. The trusted set is bounded by the markers at the frame depth
// (a change of depth invalidates the rest), so a check costs the same after 100 turns or 100,000.

/** A session's frame and its trusted markers: all the validator needs of the session's past. */
export interface FrameState {
  readonly frame: Frame | null;
  /** Markers whose latest decision is emitted, in the order of that latest decision. */
  readonly trusted: readonly MarkerEmitted[];
}

export const emptyFrameState: FrameState = { frame: null, trusted: [] };

/** The trusted markers after more decisions, with the ordering of core `latestDecisions`. */
export function trustAfter(
  trusted: readonly MarkerEmitted[],
  decisions: readonly MarkerDecision[],
): MarkerEmitted[] {
  const latest = new Map<string, MarkerEmitted>(trusted.map((marker) => [marker.markerId, marker]));
  for (const decision of decisions) {
    latest.delete(decision.markerId);
    switch (decision.type) {
      case 'marker_emitted':
        latest.set(decision.markerId, decision);
        break;
      case 'marker_invalid':
        break;
      default: {
        const unknown: never = decision;
        throw new Error(`unknown decision ${String(unknown)}`);
      }
    }
  }
  return [...latest.values()];
}

export interface CompactionDecision {
  /** What to publish, in order: the depth invalidations the new frame causes, then the node's decision. */
  readonly decisions: readonly MarkerDecision[];
  readonly next: FrameState;
}

/**
 * Decides one compaction against the session's frame state and the state at its boundary, exactly as
 * the reference pipeline does: advance the frame, invalidate every trusted marker the new depth leaves
 * behind, then decide the node's own marker.
 */
export function decideCompaction(
  state: FrameState,
  node: Compaction,
  boundary: StateAtBoundary,
  options?: CheckOptions,
): CompactionDecision {
  const frame = advanceFrame(state.frame, node);
  const invalidations = invalidationsForFrame(state.frame, frame, state.trusted);
  const trusted = trustAfter(state.trusted, invalidations);
  const decision = decideMarker({
    node,
    frame,
    state: boundary,
    decisions: trusted,
    ...(options === undefined ? {} : { options }),
  });
  return {
    decisions: [...invalidations, decision],
    next: { frame, trusted: trustAfter(trusted, [decision]) },
  };
}

/**
 * The state to decide on when the projection cannot answer for the boundary (behind after the wait,
 * broken before it, or lost): nothing but the watermark. The core check then reports `unverifiable` and
 * evaluates nothing else, so no marker is ever emitted on missing state.
 */
export function missingState(node: Compaction, appliedSeq: number): StateAtBoundary {
  return {
    tenantId: node.tenantId,
    sessionId: node.sessionId,
    fromSeq: node.span.fromSeq,
    toSeq: node.span.toSeq,
    appliedSeq: Math.min(appliedSeq, node.span.toSeq - 1),
    open: [],
    closed: [],
    disposed: [],
    artifacts: [],
    lookup: { items: new Map(), dispositions: new Map(), artifacts: new Map() },
  };
}

/** Whether a decision is the verdict on a compaction's own marker (not a depth invalidation of another). */
export function isVerdict(decision: MarkerDecision): boolean {
  return decision.type === 'marker_emitted' || decision.cause === 'check';
}

/**
 * The frame state a session's published decisions imply, in log order: how the validator rebuilds
 * its state from the markers topic when Redis lost it. Every verdict names its node's id, tier (the
 * marker depth) and generation — all `advanceFrame` needs — and every decision updates the trust.
 */
export function replayDecisions(state: FrameState, decisions: readonly MarkerDecision[]): FrameState {
  let { frame, trusted } = state;
  for (const decision of decisions) {
    if (isVerdict(decision)) {
      frame = advanceFrame(frame, {
        compactionId: decision.compactionId,
        tier: decision.depth,
        generation: decision.generation,
      });
    }
    trusted = trustAfter(trusted, [decision]);
  }
  return { frame, trusted };
}
