// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

/**
 * The validator's decision that a marker candidate is valid: every condition held at compaction
 * time, so a resume may trust the node wholesale. Published to the markers topic, keyed by
 * tenantId/sessionId. It carries no wall-clock time, so deciding the same compaction twice yields
 * the same bytes.
 */
export interface MarkerEmitted {
  /** Discriminator of the marker decision: always marker_emitted. */
  readonly type: 'marker_emitted';
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
}
