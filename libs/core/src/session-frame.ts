import { check, type CheckOptions } from './check.js';
import { markerEmitted, markerInvalid } from './compaction.js';
import { markerIdOf } from './ids.js';
import type {
  Compaction,
  Frame,
  MarkerDecision,
  MarkerEmitted,
  MarkerInvalid,
  MarkerRevocation,
  RawCheckpoint,
  ResumePlan,
  StateAtBoundary,
} from './model.js';

// The session decider: the one place that says which node frames a session, which markers are
// trusted, what a new compaction's decisions are and what a resume starts from. The validator decides
// with it, the resume worker and every rebuild fold the markers topic with it, and runReference is
// built on it. docs/decisions.md tells why its output cannot depend on timing.
//
// Contract. `decide(command, state)` returns the decisions a compaction causes, in publish order: the
// depth invalidations of its generation's trusted markers that a move of the frame to another depth
// causes, then the verdict on its own marker — or nothing, for a compaction already decided (a
// redelivery) or a strict repair no verdict asked for. `evolve(state, decision)` folds one decision
// from the markers topic; folding `decide`'s output gives the state `decide` expects next, and a
// redelivered decision changes nothing. Every generation is decided on its own nodes alone, in the
// order the compactor publishes them: by boundary (toSeq), then tier, a node's strict repair right
// after it. That order is a function of L0 and the policy, so the decisions are too. The newest
// generation frames the session; a resume reads it alone (an older one is superseded as a whole).
//
// `decideRevocation(request, state)` is the other command: an operator's revocation of a trusted marker
// becomes one MarkerInvalid with cause revoked (nothing for a marker not trusted, or revoked already);
// evolve remembers the revoked marker, so no later decision trusts it again.

/** Where a generation's fold stands: the boundary and tier of the last verdict. */
export interface Slot {
  readonly toSeq: number;
  readonly tier: number;
}

/** One generation's part of a session's frame state. */
export interface GenerationFrame {
  readonly generation: number;
  /** The newest node of the deepest tier decided: what frames the generation. */
  readonly frame: Frame;
  /** Markers whose latest decision is emitted, in the order of that decision. */
  readonly trusted: readonly MarkerEmitted[];
  /** The slot of the last verdict; a node before it was decided already. */
  readonly at: Slot;
  /** The compactions whose verdict is in that slot (a node, and its strict repair if one was decided). */
  readonly decidedAt: readonly string[];
  /** The compaction of that slot whose strict repair is to be decided next, or null. */
  readonly repairWanted: string | null;
  /** Markers an operator revoked, in the order of their revocation: never trusted again. */
  readonly revoked: readonly string[];
}

/** A session's frame state: one entry per generation, oldest first. */
export interface SessionFrameState {
  readonly generations: readonly GenerationFrame[];
}

export const initialState: SessionFrameState = { generations: [] };

/** A compaction to decide, with the materialized state at its boundary. */
export interface DecideCompaction {
  readonly node: Compaction;
  readonly state: StateAtBoundary;
  readonly options?: CheckOptions;
}

export function decide(command: DecideCompaction, state: SessionFrameState): MarkerDecision[] {
  const { node } = command;
  const current = generationOf(state, node.generation);
  if (!due(current, node)) return [];
  const frame = advanceFrame(current?.frame ?? null, node);
  const moved = current !== null && current.frame.depth !== frame.depth;
  const stale = moved ? current.trusted.filter((marker) => marker.depth !== frame.depth) : [];
  const trusted = (current?.trusted ?? []).filter((marker) => !stale.includes(marker));
  const invalidations = stale.map((marker): MarkerInvalid => ({
    ...marker,
    type: 'marker_invalid',
    cause: 'depth_change',
    violations: [
      {
        condition: 'depth',
        ids: [marker.compactionId],
        detail: `${marker.compactionId}: marker at L${marker.depth}, frame re-compacted to L${frame.depth} (node ${frame.nodeId})`,
      },
    ],
    fallback: rawCheckpoint(frame, trusted, marker.l0Partition),
  }));
  const violations = check(node, frame, command.state, command.options);
  const own = trusted.filter((marker) => marker.markerId !== node.marker.markerId);
  const verdict =
    violations.length === 0
      ? markerEmitted(node)
      : markerInvalid(node, violations, rawCheckpoint(frame, own, node.span.l0Partition), 'check');
  return [...invalidations, verdict];
}

export function evolve(state: SessionFrameState, decision: MarkerDecision): SessionFrameState {
  const current = generationOf(state, decision.generation);
  if (!isVerdict(decision)) {
    // A depth invalidation or a revocation: the marker is no longer trusted (again, if redelivered).
    if (current === null) return state;
    const trusted = current.trusted.filter((marker) => marker.markerId !== decision.markerId);
    const revoking =
      decision.type === 'marker_invalid' &&
      decision.cause === 'revoked' &&
      !current.revoked.includes(decision.markerId);
    if (trusted.length === current.trusted.length && !revoking) return state;
    const revoked = revoking ? [...current.revoked, decision.markerId] : current.revoked;
    return replace(state, { ...current, trusted, revoked });
  }
  const slot: Slot = { toSeq: decision.toSeq, tier: decision.depth };
  const order = current === null ? 1 : compareSlots(slot, current.at);
  if (current !== null && (order < 0 || (order === 0 && current.decidedAt.includes(decision.compactionId))))
    return state; // a redelivered verdict: its slot was passed, or it is in the slot already
  const node = { compactionId: decision.compactionId, tier: decision.depth, generation: decision.generation };
  const trusted = (current?.trusted ?? []).filter((marker) => marker.markerId !== decision.markerId);
  const revoked = current?.revoked ?? [];
  if (decision.type === 'marker_emitted' && !revoked.includes(decision.markerId)) trusted.push(decision);
  return replace(state, {
    generation: decision.generation,
    frame: advanceFrame(current?.frame ?? null, node),
    trusted,
    at: slot,
    decidedAt:
      current !== null && order === 0
        ? [...current.decidedAt, decision.compactionId]
        : [decision.compactionId],
    repairWanted: decision.type === 'marker_invalid' && repairable(decision) ? decision.compactionId : null,
    revoked,
  });
}

/** A revocation to decide: the request, as the revocations topic carries it. */
export interface DecideRevocation {
  readonly revocation: MarkerRevocation;
}

/**
 * The decision a revocation causes: a MarkerInvalid with cause revoked for a marker trusted in any
 * generation, falling back as a failed check would (the newest other trusted marker at the frame's
 * depth, or the session start); nothing for a marker that is not trusted (never emitted, invalidated,
 * or revoked already), so a second revocation of a marker is no decision at all.
 */
export function decideRevocation(command: DecideRevocation, state: SessionFrameState): MarkerDecision[] {
  const { markerId, reason, requestedBy } = command.revocation;
  for (const current of state.generations) {
    const marker = current.trusted.find((m) => m.markerId === markerId);
    if (marker === undefined) continue;
    const others = current.trusted.filter((m) => m !== marker);
    return [
      {
        ...marker,
        type: 'marker_invalid',
        cause: 'revoked',
        violations: [
          {
            condition: 'revoked',
            ids: [markerId],
            detail: `${markerId}: revoked by ${requestedBy}: ${reason}`,
          },
        ],
        fallback: rawCheckpoint(current.frame, others, marker.l0Partition),
      },
    ];
  }
  return [];
}

/** Whether an operator revoked this marker (in any generation). */
export function isRevoked(state: SessionFrameState, markerId: string): boolean {
  return state.generations.some((g) => g.revoked.includes(markerId));
}

/** The state a list of decisions (a session's markers, in log order) folds to. */
export function foldDecisions(decisions: readonly MarkerDecision[]): SessionFrameState {
  return decisions.reduce(evolve, initialState);
}

/** The generation that frames the session (the newest), or null before any verdict. */
export function framing(state: SessionFrameState): GenerationFrame | null {
  return state.generations.at(-1) ?? null;
}

/** The session's frame: the frame of its newest generation. */
export function frameOf(state: SessionFrameState): Frame | null {
  return framing(state)?.frame ?? null;
}

/** The markers a resume may trust: the framing generation's trusted markers. */
export function trustedMarkers(state: SessionFrameState): readonly MarkerEmitted[] {
  return framing(state)?.trusted ?? [];
}

/**
 * Where a resume starts. Digest mode when the marker of the node framing the session is trusted: that
 * node, then the raw turns after its boundary. Raw mode otherwise: the raw checkpoint (the newest
 * trusted marker at the frame's depth and the raw turns after it, or the raw log from the start).
 */
export function resumePlan(
  state: SessionFrameState,
  session: { readonly tenantId: string; readonly sessionId: string; readonly l0Partition: number },
): ResumePlan {
  const { tenantId, sessionId, l0Partition } = session;
  const current = framing(state);
  const frame = current?.frame ?? null;
  const checkpoint = rawCheckpoint(frame, current?.trusted ?? [], l0Partition);
  const marker = current?.trusted.find((m) => m.compactionId === current.frame.nodeId);
  if (frame !== null && marker !== undefined) {
    const { markerId, compactionId, depth, generation, toSeq } = marker;
    return {
      mode: 'digest',
      tenantId,
      sessionId,
      frame,
      marker: {
        markerId,
        compactionId,
        depth,
        generation,
        toSeq,
        l0Partition: marker.l0Partition,
        l0Offset: marker.l0Offset,
      },
      rawFromSeq: toSeq + 1,
    };
  }
  return {
    mode: 'raw',
    tenantId,
    sessionId,
    frame,
    checkpoint,
    rawFromSeq: checkpoint.toSeq + 1,
    reason:
      frame === null
        ? 'no_marker'
        : current!.revoked.includes(markerIdOf(frame.nodeId))
          ? 'newest_revoked'
          : 'newest_invalid',
  };
}

/** Whether a decision is the verdict on a compaction's own marker (not a depth invalidation of another). */
export function isVerdict(decision: MarkerDecision): boolean {
  return decision.type === 'marker_emitted' || decision.cause === 'check';
}

/**
 * Whether an invalid verdict asks for the node's strict repair: a fault of the summary (closure,
 * retention, artifacts), not of the frame (depth) or of the state it was checked on (unverifiable).
 */
export function repairable(decision: MarkerInvalid): boolean {
  return (
    decision.cause === 'check' &&
    decision.violations.some((v) => v.condition !== 'depth' && v.condition !== 'unverifiable')
  );
}

/**
 * The frame after a new node of the same generation: a node at or above the frame's depth takes it
 * (so the frame's depth never falls within a generation), one below never does.
 */
export function advanceFrame(
  current: Frame | null,
  node: Pick<Compaction, 'compactionId' | 'tier' | 'generation'>,
): Frame {
  const next: Frame = { nodeId: node.compactionId, depth: node.tier, generation: node.generation };
  return current === null || node.tier >= current.depth ? next : current;
}

/**
 * The raw checkpoint: the newest trusted marker at the frame's depth (its node plus the raw turns after
 * it), or the session start (the raw log alone). Newest is the furthest boundary; a tie goes to the
 * later decision.
 */
export function rawCheckpoint(
  frame: Frame | null,
  trusted: readonly MarkerEmitted[],
  l0Partition: number,
): RawCheckpoint {
  let best: MarkerEmitted | null = null;
  for (const marker of trusted) {
    if (frame !== null && marker.depth === frame.depth && (best === null || marker.toSeq >= best.toSeq)) {
      best = marker;
    }
  }
  if (best === null) return { markerId: null, compactionId: null, toSeq: 0, l0Partition, l0Offset: null };
  const { markerId, compactionId, toSeq } = best;
  return { markerId, compactionId, toSeq, l0Partition: best.l0Partition, l0Offset: best.l0Offset };
}

/**
 * Whether a compaction is the next to decide in its generation: a first attempt past the last slot, or
 * the strict repair the last verdict asked for. Anything else was decided already (a redelivery, a
 * compactor's republication after a crash or a rebuild) or was never asked for (the repair of a node
 * whose marker was emitted), and gets no decision at all.
 */
function due(current: GenerationFrame | null, node: Compaction): boolean {
  const slot: Slot = { toSeq: node.span.toSeq, tier: node.tier };
  const order = current === null ? 1 : compareSlots(slot, current.at);
  if (order > 0) return node.attempt === 0;
  if (order < 0 || current === null || current.decidedAt.includes(node.compactionId)) return false;
  return node.repairOf !== null && node.repairOf === current.repairWanted;
}

function compareSlots(a: Slot, b: Slot): number {
  return a.toSeq - b.toSeq || a.tier - b.tier;
}

function generationOf(state: SessionFrameState, generation: number): GenerationFrame | null {
  return state.generations.find((g) => g.generation === generation) ?? null;
}

function replace(state: SessionFrameState, next: GenerationFrame): SessionFrameState {
  const others = state.generations.filter((g) => g.generation !== next.generation);
  return { generations: [...others, next].sort((a, b) => a.generation - b.generation) };
}
