import {
  evolve,
  initialState,
  resumePlan,
  TidemarkCoreError,
  type MarkerDecision,
  type ResumePlan,
  type SessionFrameState,
} from '@tidemark/core';

// The resume worker's per-session state: the markers topic folded with core's session decider, and the
// plan it implies. Pure, so it is tested against core's runReference without infrastructure; the
// PlanStore persists it as JSON.
//
// The frame, the trusted markers and the plan are core's (evolve, resumePlan): the validator decides
// with the same decider, so folding its decisions here yields its frame, with no dependency on another
// service's keys and no race between reading its frame and reading our markers. Nothing here folds
// frames or decisions itself; a redelivered or re-published decision is a no-op of core's evolve.

export interface SessionPlanState {
  readonly tenantId: string;
  readonly sessionId: string;
  /** The markers-topic offset of the last record applied (-1 before any): records at or below it are redeliveries and skipped. */
  readonly lastOffset: number;
  /** The session's turns.l0 partition (one session lives in one), from its first decision; null before it. */
  readonly l0Partition: number | null;
  /** Core's session decider state over the session's decisions. */
  readonly frames: SessionFrameState;
  /**
   * The end of the newest L1 span any decision names (emitted or invalid, any cause, any generation); 0
   * before the first. The compactor cuts the next L1 from the seq after it, so the next L1 boundary is
   * due by this plus l1EveryTurns at the latest (sooner under a token budget). Every generation counts: a
   * replay under a new policy re-decides spans already decided once, and is not reported overdue for them.
   */
  readonly decidedL1ToSeq: number;
  /** Core resumePlan over the frames; null until the first decision. */
  readonly plan: ResumePlan | null;
}

export function emptySessionState(tenantId: string, sessionId: string): SessionPlanState {
  return {
    tenantId,
    sessionId,
    lastOffset: -1,
    l0Partition: null,
    frames: initialState,
    decidedL1ToSeq: 0,
    plan: null,
  };
}

/**
 * Applies a session's decisions, read at the given markers offsets, in offset order. A record at or
 * below lastOffset is a redelivery and is skipped; a decision of another session only moves lastOffset.
 */
export function applyDecisions(
  state: SessionPlanState,
  records: readonly { readonly offset: number; readonly decision: MarkerDecision }[],
): { readonly state: SessionPlanState; readonly changed: boolean } {
  let { lastOffset, l0Partition, frames, decidedL1ToSeq } = state;
  let changed = false;
  for (const { offset, decision } of records) {
    if (offset <= lastOffset) continue;
    lastOffset = offset;
    changed = true;
    if (decision.tenantId !== state.tenantId || decision.sessionId !== state.sessionId) continue;
    l0Partition ??= decision.l0Partition;
    frames = evolve(frames, decision);
    if (decision.depth === 1 && decision.toSeq > decidedL1ToSeq) decidedL1ToSeq = decision.toSeq;
  }
  if (!changed) return { state, changed };
  const { tenantId, sessionId } = state;
  const plan = l0Partition === null ? null : resumePlan(frames, { tenantId, sessionId, l0Partition });
  return { state: { tenantId, sessionId, lastOffset, l0Partition, frames, decidedL1ToSeq, plan }, changed };
}

/**
 * The plan as the worker stores it: core's plan plus the newest decided L1 boundary, so that a resume
 * tells whether a compaction is overdue from the plan it reads anyway (no extra round trip, no parsing
 * of the worker state). The store keeps the plan's JSON as it is given.
 */
export type StoredPlan = ResumePlan & { readonly decidedL1ToSeq: number };

export function storedPlanOf(state: SessionPlanState & { readonly plan: ResumePlan }): StoredPlan {
  return { ...state.plan, decidedL1ToSeq: state.decidedL1ToSeq };
}

/**
 * Splits a plan read from the store into core's plan and its decided L1 boundary. Every plan of this
 * store version carries the boundary (a store of an older version is rebuilt under a new epoch key
 * before it is read), so one without it is a corrupt store, and said so.
 */
export function splitStoredPlan(stored: ResumePlan): { plan: ResumePlan; decidedL1ToSeq: number } {
  const { decidedL1ToSeq: decided, ...plan } = stored as ResumePlan & { decidedL1ToSeq?: unknown };
  if (typeof decided !== 'number' || !Number.isSafeInteger(decided)) {
    throw new TidemarkCoreError('invalid_input', 'a stored resume plan has no decidedL1ToSeq');
  }
  return { plan, decidedL1ToSeq: decided };
}
