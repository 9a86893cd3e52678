import { advanceFrame, decideResume, type Frame, type MarkerDecision, type ResumePlan } from '@tidemark/core';

// The resume worker's per-session state: the decisions a plan needs and the frame they imply. Pure, so
// it is tested against core's runReference without infrastructure; the PlanStore persists it.
//
// The frame is derived from the decisions rather than read from the validator: the validator advances
// its frame with every compaction (core advanceFrame) and publishes exactly one `check` decision per
// compaction, carrying the node's id, depth (= tier) and generation. Replaying those decisions through
// advanceFrame therefore yields the validator's frame, with no dependency on another service's keys and
// no race between reading its frame and reading our markers. `depth_change` invalidations are
// consequences of a frame move (the move itself comes with the next node's check decision), so they
// change a marker's trust but never advance the frame.

/** A marker's latest decision, reduced to what decideResume reads. */
export interface StoredDecision {
  readonly type: MarkerDecision['type'];
  readonly markerId: string;
  readonly compactionId: string;
  readonly depth: number;
  readonly generation: number;
  readonly toSeq: number;
  readonly l0Partition: number;
  readonly l0Offset: number;
  /** check for every emitted marker; check or depth_change for an invalid one. */
  readonly cause: 'check' | 'depth_change';
}

export interface SessionPlanState {
  readonly tenantId: string;
  readonly sessionId: string;
  /** The markers-topic offset of the last decision applied (-1 before any): redeliveries are skipped. */
  readonly lastOffset: number;
  readonly frame: Frame | null;
  /** Each marker's latest decision, in the order of its latest change (core latestDecisions order). */
  readonly decisions: readonly StoredDecision[];
  /** decideResume over the above; null until the first decision. */
  readonly plan: ResumePlan | null;
}

export function emptySessionState(tenantId: string, sessionId: string): SessionPlanState {
  return { tenantId, sessionId, lastOffset: -1, frame: null, decisions: [], plan: null };
}

export function storedDecision(decision: MarkerDecision): StoredDecision {
  const { type, markerId, compactionId, depth, generation, toSeq, l0Partition, l0Offset } = decision;
  const cause = decision.type === 'marker_invalid' ? decision.cause : 'check';
  return { type, markerId, compactionId, depth, generation, toSeq, l0Partition, l0Offset, cause };
}

/**
 * Applies a session's decisions, read at the given markers offsets, in offset order. A record at or
 * below lastOffset is a redelivery and is skipped. A decision identical to the marker's current one
 * (a validator that re-published after a crash) changes nothing, so that it neither reorders ties nor
 * moves the frame back to a node it already passed.
 */
export function applyDecisions(
  state: SessionPlanState,
  records: readonly { readonly offset: number; readonly decision: MarkerDecision }[],
): { readonly state: SessionPlanState; readonly changed: boolean } {
  let { frame, lastOffset } = state;
  const latest = new Map(state.decisions.map((d) => [d.markerId, d]));
  let changed = false;
  for (const { offset, decision } of records) {
    if (offset <= lastOffset) continue;
    lastOffset = offset;
    changed = true;
    if (decision.tenantId !== state.tenantId || decision.sessionId !== state.sessionId) continue;
    const next = storedDecision(decision);
    const current = latest.get(next.markerId);
    if (current !== undefined && sameDecision(current, next)) continue;
    // A first check decision is the validator's verdict on a new node: the node it framed first.
    if (current === undefined && next.cause === 'check') {
      frame = advanceFrame(frame, {
        compactionId: next.compactionId,
        tier: next.depth,
        generation: next.generation,
      });
    }
    latest.delete(next.markerId);
    latest.set(next.markerId, next);
  }
  if (!changed) return { state, changed };
  const decisions = [...latest.values()];
  const plan = decisions.length === 0 ? null : planOf(state.tenantId, state.sessionId, frame, decisions);
  return { state: { ...state, lastOffset, frame, decisions, plan }, changed };
}

/**
 * The end of the newest L1 span any decision names (emitted or invalid, any cause, any generation); 0
 * before the first. The compactor cuts the next L1 from the seq after it, so the next L1 boundary is due
 * by this plus l1EveryTurns at the latest (sooner under a token budget). Every generation counts: a
 * replay under a new policy re-decides spans already decided once, and is not reported overdue for them.
 */
export function decidedL1ToSeq(decisions: readonly StoredDecision[]): number {
  let toSeq = 0;
  for (const decision of decisions)
    if (decision.depth === 1 && decision.toSeq > toSeq) toSeq = decision.toSeq;
  return toSeq;
}

/**
 * The plan as the worker stores it: core's plan plus the newest decided L1 boundary, so that a resume
 * tells whether a compaction is overdue from the plan it reads anyway (no extra round trip, no parsing
 * of the decision history). The store keeps the plan's JSON as it is given.
 */
export type StoredPlan = ResumePlan & { readonly decidedL1ToSeq: number };

export function storedPlanOf(state: SessionPlanState & { readonly plan: ResumePlan }): StoredPlan {
  return { ...state.plan, decidedL1ToSeq: decidedL1ToSeq(state.decisions) };
}

/**
 * Splits a plan read from the store into core's plan and its decided L1 boundary: null for a plan
 * written before the boundary was stored (the reader then derives it from the worker state).
 */
export function splitStoredPlan(stored: ResumePlan): { plan: ResumePlan; decidedL1ToSeq: number | null } {
  const { decidedL1ToSeq: decided, ...plan } = stored as ResumePlan & { decidedL1ToSeq?: unknown };
  return {
    plan,
    decidedL1ToSeq: typeof decided === 'number' && Number.isSafeInteger(decided) ? decided : null,
  };
}

function sameDecision(a: StoredDecision, b: StoredDecision): boolean {
  return (
    a.type === b.type &&
    a.cause === b.cause &&
    a.compactionId === b.compactionId &&
    a.depth === b.depth &&
    a.generation === b.generation &&
    a.toSeq === b.toSeq &&
    a.l0Partition === b.l0Partition &&
    a.l0Offset === b.l0Offset
  );
}

/** Core decideResume over the stored decisions (violations and fallbacks are not read by it). */
export function planOf(
  tenantId: string,
  sessionId: string,
  frame: Frame | null,
  decisions: readonly StoredDecision[],
): ResumePlan {
  const first = decisions[0];
  return decideResume({
    tenantId,
    sessionId,
    // One session lives in one turns.l0 partition; every decision names it.
    l0Partition: first?.l0Partition ?? 0,
    frame,
    decisions: decisions.map((d) => asDecision(tenantId, sessionId, d)),
  });
}

function asDecision(tenantId: string, sessionId: string, d: StoredDecision): MarkerDecision {
  const base = {
    markerId: d.markerId,
    compactionId: d.compactionId,
    tenantId,
    sessionId,
    depth: d.depth,
    generation: d.generation,
    toSeq: d.toSeq,
    l0Partition: d.l0Partition,
    l0Offset: d.l0Offset,
    compactorVersion: '',
  };
  switch (d.type) {
    case 'marker_emitted':
      return { ...base, type: 'marker_emitted' };
    case 'marker_invalid':
      return {
        ...base,
        type: 'marker_invalid',
        cause: d.cause,
        violations: [],
        fallback: {
          markerId: null,
          compactionId: null,
          toSeq: 0,
          l0Partition: d.l0Partition,
          l0Offset: null,
        },
      };
    default: {
      const never: never = d.type;
      throw new Error(`unknown decision type ${String(never)}`);
    }
  }
}
