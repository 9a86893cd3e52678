// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

/**
 * The validator's decision that a marker must not be trusted, with every failing condition and the
 * ids that fail it, and the raw checkpoint a resume falls back to. Published to the markers topic,
 * keyed by tenantId/sessionId, at compaction time (cause check), when a re-compaction changes the
 * frame depth under an emitted marker (cause depth_change), or when an operator revokes an emitted
 * marker (cause revoked). It carries no wall-clock time.
 */
export interface MarkerInvalid {
  /** Discriminator of the marker decision: always marker_invalid. */
  readonly type: 'marker_invalid';
  /** The marker's id (from the candidate). */
  readonly markerId: string;
  /** The node the marker points at. */
  readonly compactionId: string;
  /** The tenant that owns the session. */
  readonly tenantId: string;
  /** The session. */
  readonly sessionId: string;
  /** The tier depth the marker points at. */
  readonly depth: number;
  /** The node's generation. */
  readonly generation: number;
  /** The seq the marker covers up to (inclusive). */
  readonly toSeq: number;
  /** The turns.l0 partition it covers. */
  readonly l0Partition: number;
  /** The turns.l0 offset it covers up to (inclusive). */
  readonly l0Offset: number;
  /** The version of the compactor that produced the node. */
  readonly compactorVersion: string;
  /**
   * check: the candidate failed the check at compaction time. depth_change: an emitted marker was
   * invalidated because a re-compaction moved the frame to another depth. revoked: an operator
   * revoked an emitted marker (a MarkerRevocation on the revocations topic); the violation names
   * who and why.
   */
  readonly cause: InvalidationCause;
  /**
   * Every failing condition, at most one per condition, in the order closure, retention, depth,
   * artifacts, unverifiable, revoked. Never empty.
   */
  readonly violations: readonly Violation[];
  /** Where a resume falls back to. */
  readonly fallback: RawCheckpoint;
}

/** Why a marker decision was made. */
export type InvalidationCause = 'check' | 'depth_change' | 'revoked';

/** Every InvalidationCause, in schema order. */
export const InvalidationCauseSymbols: readonly InvalidationCause[] = ['check', 'depth_change', 'revoked'];

/** One failing condition and every id that fails it. */
export interface Violation {
  /** The condition that failed. */
  readonly condition: ViolationCondition;
  /**
   * Every id that fails it, sorted and unique: item ids (closure), disposition keys and constraint
   * ids (retention), artifact paths (artifacts), the node id (depth, unverifiable), the marker id
   * (revoked).
   */
  readonly ids: readonly string[];
  /** A deterministic, human-readable account of what failed for each id. */
  readonly detail: string;
}

/** The condition of validity that failed. */
export type ViolationCondition = 'closure' | 'retention' | 'depth' | 'artifacts' | 'unverifiable' | 'revoked';

/** Every ViolationCondition, in schema order. */
export const ViolationConditionSymbols: readonly ViolationCondition[] = ['closure', 'retention', 'depth', 'artifacts', 'unverifiable', 'revoked'];

/**
 * The nearest position a resume is known good from without the invalid marker: the newest marker
 * emitted valid at the frame depth (its node plus the raw turns after it), or the session start
 * (the raw log alone).
 */
export interface RawCheckpoint {
  /** The newest valid marker at the frame depth; null for the session start. */
  readonly markerId: string | null;
  /** The node that marker points at; null for the session start. */
  readonly compactionId: string | null;
  /** The seq the checkpoint covers up to; 0 for the session start. */
  readonly toSeq: number;
  /** The turns.l0 partition of the session. */
  readonly l0Partition: number;
  /** The turns.l0 offset the checkpoint covers up to; null for the session start. */
  readonly l0Offset: number | null;
}
