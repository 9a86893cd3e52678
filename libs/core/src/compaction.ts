import { canonicalJson } from './canonical.js';
import { invalidInput } from './errors.js';
import { compactionIdOf, markerIdOf, policyIdOf } from './ids.js';
import type {
  Compaction,
  CompactionSpan,
  MarkerEmitted,
  MarkerInvalid,
  Policy,
  RawCheckpoint,
  Summary,
  Violation,
} from './model.js';

// Building compaction nodes and the validator's decisions about them, with content-derived ids and no
// wall-clock time, so that replaying the same L0 under the same policy yields the same bytes.

export interface CompactionInput {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly tier: number;
  readonly generation: number;
  readonly policy: Policy;
  readonly span: CompactionSpan;
  /** For a digest, the nodes one tier lower, in seq order; empty for an L1 summary. */
  readonly children: readonly string[];
  readonly summary: Summary;
  /** The summarizer that actually ran (a repair runs strict whatever the policy says). */
  readonly summarizer: string;
  readonly compactorVersion: string;
  /** The node this one repairs, or null. */
  readonly repairOf: string | null;
  /** 0 for a first compaction of the span; n for its n-th repair. */
  readonly attempt: number;
}

export function buildCompaction(input: CompactionInput): Compaction {
  const { tenantId, sessionId, tier, generation, policy, span, summary, attempt } = input;
  if (!Number.isSafeInteger(tier) || tier < 1) throw invalidInput(`tier ${tier} is not at least 1`);
  if (span.fromSeq < 1 || span.toSeq < span.fromSeq) {
    throw invalidInput(`not a span: ${span.fromSeq}..${span.toSeq}`);
  }
  if ((tier === 1) !== (input.children.length === 0)) {
    throw invalidInput('an L1 summary has no children and a digest has some');
  }
  const policyId = policyIdOf(policy);
  const compactionId = compactionIdOf({
    tenantId,
    sessionId,
    tier,
    generation,
    fromSeq: span.fromSeq,
    toSeq: span.toSeq,
    policyId,
    attempt,
  });
  return {
    compactionId,
    tenantId,
    sessionId,
    tier,
    generation,
    policyId,
    policy: canonicalJson(policy),
    span,
    children: [...input.children],
    narrative: summary.narrative,
    claims: summary.claims,
    tokenCount: summary.tokenCount,
    compactorVersion: input.compactorVersion,
    summarizer: input.summarizer,
    marker: {
      markerId: markerIdOf(compactionId),
      nodeId: compactionId,
      depth: tier,
      generation,
      l0Partition: span.l0Partition,
      l0Offset: span.toOffset,
      toSeq: span.toSeq,
    },
    repairOf: input.repairOf,
    attempt,
  };
}

/**
 * A node as its strict repair reads: the same node with the strict summary's narrative, claims and size
 * (or the node itself when it was summarized strictly). What a strict summary of a digest quotes for
 * its children, and carries forward from its prior frame, so that a repair never quotes a lossy node.
 */
export function asStrict(node: Compaction, strict: Summary | null): Compaction {
  if (strict === null) return node;
  return { ...node, narrative: strict.narrative, claims: strict.claims, tokenCount: strict.tokenCount };
}

export function markerEmitted(node: Compaction): MarkerEmitted {
  const { marker } = node;
  return {
    type: 'marker_emitted',
    markerId: marker.markerId,
    compactionId: node.compactionId,
    tenantId: node.tenantId,
    sessionId: node.sessionId,
    depth: marker.depth,
    generation: marker.generation,
    toSeq: marker.toSeq,
    l0Partition: marker.l0Partition,
    l0Offset: marker.l0Offset,
    compactorVersion: node.compactorVersion,
  };
}

export function markerInvalid(
  node: Compaction,
  violations: readonly Violation[],
  fallback: RawCheckpoint,
  cause: MarkerInvalid['cause'],
): MarkerInvalid {
  if (violations.length === 0) throw invalidInput('an invalid marker needs at least one violation');
  return { ...markerEmitted(node), type: 'marker_invalid', cause, violations: [...violations], fallback };
}

/**
 * The strict repair of a node: the same span, children and prior, summarized strictly (its strict
 * rendition, made while the span's turns were at hand), attempt + 1. The compactor publishes it right
 * after a node a lossy summarizer wrote; the decider decides it only if the node's verdict asks for it.
 */
export function strictRepairOf(node: Compaction, strict: Summary): Compaction {
  return buildCompaction({
    tenantId: node.tenantId,
    sessionId: node.sessionId,
    tier: node.tier,
    generation: node.generation,
    policy: JSON.parse(node.policy) as Policy,
    span: node.span,
    children: node.children,
    summary: strict,
    summarizer: 'strict',
    compactorVersion: node.compactorVersion,
    repairOf: node.compactionId,
    attempt: node.attempt + 1,
  });
}
