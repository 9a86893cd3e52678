// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

/**
 * A compaction node: an L1 summary of a contiguous span of L0 turns, or an L2+ digest of lower-tier
 * nodes. Published to the compactions topic by the compactor, each with the marker candidate it
 * proposes; the validator checks its claims against the log before any marker is emitted. Replaying
 * the same L0 under the same policy yields byte-identical compactions.
 */
export interface Compaction {
  /**
   * Content-derived id: SHA-256 (hex) of the canonical JSON of tenant, session, tier, generation,
   * span seqs (fromSeq, toSeq), policyId and attempt. The same input gives the same id, so a
   * duplicate is recognisable.
   */
  readonly compactionId: string;
  /** The tenant that owns the session. */
  readonly tenantId: string;
  /** The session the node summarises. */
  readonly sessionId: string;
  /**
   * The node's tier depth: 1 for a turn summary (L1), 2 or more for a digest of nodes one tier
   * lower.
   */
  readonly tier: number;
  /**
   * The compaction generation: one policy's pass over the history. A replay under a new policy
   * starts a new generation.
   */
  readonly generation: number;
  /** SHA-256 (hex) of the canonical JSON of the compaction policy that produced the node. */
  readonly policyId: string;
  /** The policy itself, as canonical JSON, for readers. */
  readonly policy: string;
  /**
   * The L0 turns the node covers; for a digest, from its first child's fromSeq to its last child's
   * toSeq.
   */
  readonly span: CompactionSpan;
  /**
   * For a digest, the compaction ids of the nodes one tier lower that it summarises, in seq order;
   * empty for an L1 summary.
   */
  readonly children: readonly string[];
  /**
   * The prose summary. It fits the policy's narrative token budget; it is never trusted for state,
   * the claims are.
   */
  readonly narrative: string;
  /** The node's claims about state at its boundary. */
  readonly claims: Claims;
  /**
   * The node's size in estimated tokens (ceil(characters / 4)) of its narrative plus its claims as
   * canonical JSON; digests are planned on it.
   */
  readonly tokenCount: number;
  /** The version of the compactor that produced the node. */
  readonly compactorVersion: string;
  /**
   * The summarizer that produced the narrative and claims: strict, narrative, or model:<model
   * name>.
   */
  readonly summarizer: string;
  /** The marker candidate the node proposes. */
  readonly marker: MarkerCandidate;
  /**
   * For a re-compaction after a MarkerInvalid, the compaction id of the node it repairs; null
   * otherwise.
   */
  readonly repairOf: string | null;
  /** 0 for a first compaction of a span; n for its n-th repair (bounded by the compactor). */
  readonly attempt: number;
}

/** The contiguous range of L0 turns a node covers, by seq and by position in turns.l0. */
export interface CompactionSpan {
  /** The first turn covered (inclusive). */
  readonly fromSeq: number;
  /** The last turn covered (inclusive): the compaction boundary. */
  readonly toSeq: number;
  /** The turns.l0 partition holding the session. */
  readonly l0Partition: number;
  /** The turns.l0 offset of the turn at fromSeq. */
  readonly fromOffset: number;
  /** The turns.l0 offset of the turn at toSeq. */
  readonly toOffset: number;
}

/**
 * What the node says about state as of its boundary (span.toSeq), each fact with the L0 seq it came
 * from. Every fact the next action depends on must be claimed, and every claim must be true of the
 * log; the validator checks both.
 */
export interface Claims {
  /** Items closed inside the span, with their outcome. */
  readonly resolved: readonly ResolvedClaim[];
  /**
   * Every item open at the boundary (opened at or before it, not ended at or before it), wherever
   * it was opened: the items marked UNRESOLVED.
   */
  readonly unresolved: readonly UnresolvedClaim[];
  /**
   * Every key disposed inside the span, with its latest disposition in the span. A node may also
   * carry dispositions from before its span (from the prior frame); those must be true of the log
   * too.
   */
  readonly dispositions: readonly DispositionClaim[];
  /**
   * Every artifact created or modified inside the span and not deleted at the boundary, with its
   * latest action (required); artifacts deleted inside the span may be claimed as deleted. A node
   * may also carry artifacts from before its span (from the prior frame); those must be true of the
   * log too.
   */
  readonly artifacts: readonly ArtifactClaim[];
  /**
   * Every user constraint active at the boundary (opened, not closed, not disposed). A superseded
   * constraint must not appear here.
   */
  readonly constraints: readonly ConstraintClaim[];
}

/** A claim that an item was closed. */
export interface ResolvedClaim {
  /** The item's id. */
  readonly itemId: string;
  /** How it ended. */
  readonly outcome: ItemOutcome;
  /** The seq of the turn that closed it. */
  readonly seq: number;
  /**
   * The item's name as the log opened it (the tool, the process), for readers; when stated it must
   * be the log's. Null in nodes written before it existed.
   */
  readonly name: string | null;
  /**
   * The item's detail as the log opened it (the path, the command); when stated it must be the
   * log's.
   */
  readonly detail: string | null;
  /** The detail the log closed it with (the result, the error); when stated it must be the log's. */
  readonly outcomeDetail: string | null;
}

/** How an item ended. */
export type ItemOutcome = 'ok' | 'error' | 'cancelled';

/** Every ItemOutcome, in schema order. */
export const ItemOutcomeSymbols: readonly ItemOutcome[] = ['ok', 'error', 'cancelled'];

/** A claim that an item is still open at the boundary. */
export interface UnresolvedClaim {
  /** The item's id. */
  readonly itemId: string;
  /** The item's kind. */
  readonly kind: ItemKind;
  /** The item's name, for readers. */
  readonly name: string;
  /** The seq of the turn that opened it. */
  readonly seq: number;
  /**
   * The item's detail as the log opened it (the arguments, the command): what a resumed agent needs
   * to recognise it. Must be the log's, null only when the log has none.
   */
  readonly detail: string | null;
  /**
   * How to reach it again (a pid, a job id, a call id at the provider). Must be the log's, null
   * only when the log has none: a wrong or missing handle fails the check.
   */
  readonly handle: string | null;
  /** Where its output goes. Must be the log's, null only when the log has none. */
  readonly logPath: string | null;
}

/** What kind of thing an open item is. */
export type ItemKind = 'tool_call' | 'approval_request' | 'file_handle' | 'subprocess' | 'constraint';

/** Every ItemKind, in schema order. */
export const ItemKindSymbols: readonly ItemKind[] = ['tool_call', 'approval_request', 'file_handle', 'subprocess', 'constraint'];

/** A claim that something was rejected, failed or superseded. */
export interface DispositionClaim {
  /** The disposed key or item id. */
  readonly itemKey: string;
  /** The disposition; it must match the log's, existence alone does not count. */
  readonly disposition: Disposition;
  /** Why, as the log says it. */
  readonly reason: string;
  /** For superseded, what replaced it; null otherwise. */
  readonly supersededBy: string | null;
  /** The seq of the turn that disposed it. */
  readonly seq: number;
}

/** The kind of negative state transition. */
export type Disposition = 'rejected' | 'failed' | 'superseded';

/** Every Disposition, in schema order. */
export const DispositionSymbols: readonly Disposition[] = ['rejected', 'failed', 'superseded'];

/** A claim about an artifact's latest action at the boundary. */
export interface ArtifactClaim {
  /** The artifact's path or URI. */
  readonly path: string;
  /** Its latest action at or before the boundary. */
  readonly action: ArtifactAction;
  /** Its content digest after that action, as the log says it. */
  readonly digest: string | null;
  /** The seq of the turn of that action. */
  readonly seq: number;
}

/** What happened to an artifact. */
export type ArtifactAction = 'created' | 'modified' | 'deleted';

/** Every ArtifactAction, in schema order. */
export const ArtifactActionSymbols: readonly ArtifactAction[] = ['created', 'modified', 'deleted'];

/** A claim that a user constraint is in force. */
export interface ConstraintClaim {
  /** The constraint's item id. */
  readonly itemId: string;
  /** The constraint in a few words. */
  readonly name: string;
  /** The constraint's full text, when the log has it. */
  readonly detail: string | null;
  /** The seq of the turn that opened it. */
  readonly seq: number;
}

/**
 * The recovery marker the node proposes: a pointer (the node, its depth and generation, the L0
 * position covered) plus a promise that the node holds every fact needed to continue.
 */
export interface MarkerCandidate {
  /** Content-derived id: SHA-256 (hex) of the canonical JSON of the compaction id. */
  readonly markerId: string;
  /** The compaction id of the node it points at. */
  readonly nodeId: string;
  /** The tier depth it points at; equals the node's tier. */
  readonly depth: number;
  /** The node's generation. */
  readonly generation: number;
  /** The turns.l0 partition it covers. */
  readonly l0Partition: number;
  /** The turns.l0 offset it covers up to (inclusive): the turn at toSeq. */
  readonly l0Offset: number;
  /** The seq it covers up to (inclusive). */
  readonly toSeq: number;
}
