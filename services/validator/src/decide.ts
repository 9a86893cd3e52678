import type { Compaction, StateAtBoundary } from '@tidemark/core';

// What the validator decides on when the projection cannot answer for a boundary. The decisions
// themselves are core's session decider (`decide`/`evolve` in libs/core/src/session-frame.ts).

/**
 * The state to decide on when the log keeps the projection from ever answering for the boundary (a broken
 * mark at or before it): nothing but the watermark. The core check then reports `unverifiable` and
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
