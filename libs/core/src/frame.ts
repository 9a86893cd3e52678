import type {
  Compaction,
  Frame,
  MarkerDecision,
  MarkerEmitted,
  MarkerInvalid,
  RawCheckpoint,
} from './model.js';

// The frame of a session, and what a change of frame depth does to the markers already emitted.

/**
 * The frame after a new node: the newest top-tier node of the newest generation. A node of a newer
 * generation takes the frame (a replay under a new policy), one of an older generation never does, and
 * within a generation a node at or above the frame's depth does.
 */
export function advanceFrame(
  current: Frame | null,
  node: Pick<Compaction, 'compactionId' | 'tier' | 'generation'>,
): Frame {
  const next: Frame = { nodeId: node.compactionId, depth: node.tier, generation: node.generation };
  if (current === null || node.generation > current.generation) return next;
  if (node.generation < current.generation) return current;
  return node.tier >= current.depth ? next : current;
}

/** Each marker's latest decision, in the order markers were first decided. */
export function latestDecisions(decisions: readonly MarkerDecision[]): MarkerDecision[] {
  const latest = new Map<string, MarkerDecision>();
  for (const decision of decisions) {
    latest.delete(decision.markerId);
    latest.set(decision.markerId, decision);
  }
  return [...latest.values()];
}

/** Markers whose latest decision is emitted: the ones a resume may trust. */
export function trustedMarkers(decisions: readonly MarkerDecision[]): MarkerEmitted[] {
  return latestDecisions(decisions).filter(
    (decision): decision is MarkerEmitted => decision.type === 'marker_emitted',
  );
}

/**
 * The raw checkpoint: the newest marker emitted valid at the frame's depth (its node plus the raw turns
 * after it), or the session start (the raw log alone). Newest is the furthest boundary; a tie goes to the
 * later decision.
 */
export function rawCheckpoint(
  frame: Frame | null,
  decisions: readonly MarkerDecision[],
  l0Partition: number,
): RawCheckpoint {
  let best: MarkerEmitted | null = null;
  for (const marker of trustedMarkers(decisions)) {
    if (frame !== null && marker.depth === frame.depth && (best === null || marker.toSeq >= best.toSeq)) {
      best = marker;
    }
  }
  if (best === null) return { markerId: null, compactionId: null, toSeq: 0, l0Partition, l0Offset: null };
  return {
    markerId: best.markerId,
    compactionId: best.compactionId,
    toSeq: best.toSeq,
    l0Partition: best.l0Partition,
    l0Offset: best.l0Offset,
  };
}

/**
 * When a re-compaction moves the frame to another depth, every marker still trusted at another depth
 * is invalidated (below the new frame, or above it after a new generation restarts lower), each with a
 * depth violation and the checkpoint at the new depth. Empty when the depth did not change.
 */
export function invalidationsForFrame(
  previous: Frame | null,
  next: Frame,
  decisions: readonly MarkerDecision[],
): MarkerInvalid[] {
  if (previous === null || previous.depth === next.depth) return [];
  const stale = trustedMarkers(decisions).filter((marker) => marker.depth !== next.depth);
  return stale.map((marker) => ({
    ...marker,
    type: 'marker_invalid',
    cause: 'depth_change',
    violations: [
      {
        condition: 'depth',
        ids: [marker.compactionId],
        detail: `${marker.compactionId}: marker at L${marker.depth}, frame re-compacted to L${next.depth} (node ${next.nodeId})`,
      },
    ],
    fallback: rawCheckpoint(next, decisions, marker.l0Partition),
  }));
}
