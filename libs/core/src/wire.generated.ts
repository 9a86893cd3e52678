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

/**
 * An input a service could not process, kept with its original bytes and a reason code so that
 * nothing is dropped silently. Published to the deadletter topic; the service then carries on with
 * the next record.
 */
export interface DeadLetter {
  /** The topic the record was read from. */
  readonly originalTopic: string;
  /** The partition it was read from. */
  readonly partition: number;
  /** Its offset in that partition. */
  readonly offset: number;
  /** The record's key bytes as read; null when it had none. */
  readonly key: Uint8Array | null;
  /** The record's value bytes as read, registry framing included; null for a tombstone. */
  readonly value: Uint8Array | null;
  /**
   * not_avro: too short to carry the registry framing. wrong_magic_byte: the first byte is not 0.
   * unknown_schema_id: the registry does not know the schema id. unexpected_schema: a known schema,
   * but not the topic's record. decode_failed: the body does not decode under its schema.
   * empty_value: no value (a tombstone or zero bytes). missing_ids: a required id is empty.
   * invalid_event: a field is out of range (seq below 1, negative token count, superseded without
   * supersededBy, another session's turn). oversize: larger than the configured bound. seq_gap: a
   * seq past the next one. seq_duplicate_conflict: the session's latest seq again with another
   * turnId. seq_regression: an earlier seq with another turnId. unknown_item: a close for an item
   * never opened. duplicate_item: an item id opened twice. item_not_open: a close for an item that
   * already ended.
   */
  readonly reason: DeadLetterReason;
  /** A human-readable account of what was wrong. */
  readonly message: string;
  /** The service that dead-lettered it (materializer, compactor, validator, resume). */
  readonly service: string;
  /**
   * When the service dead-lettered it, in milliseconds since the Unix epoch (UTC). Dead letters are
   * diagnostics, outside the deterministic outputs.
   */
  readonly observedAt: number;
}

/** Why an input could not be processed. A closed list: consumers may switch on it. */
export type DeadLetterReason = 'not_avro' | 'wrong_magic_byte' | 'unknown_schema_id' | 'unexpected_schema' | 'decode_failed' | 'empty_value' | 'missing_ids' | 'invalid_event' | 'oversize' | 'seq_gap' | 'seq_duplicate_conflict' | 'seq_regression' | 'unknown_item' | 'duplicate_item' | 'item_not_open';

/** Every DeadLetterReason, in schema order. */
export const DeadLetterReasonSymbols: readonly DeadLetterReason[] = ['not_avro', 'wrong_magic_byte', 'unknown_schema_id', 'unexpected_schema', 'decode_failed', 'empty_value', 'missing_ids', 'invalid_event', 'oversize', 'seq_gap', 'seq_duplicate_conflict', 'seq_regression', 'unknown_item', 'duplicate_item', 'item_not_open'];

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

/**
 * The validator's decision that a marker must not be trusted, with every failing condition and the
 * ids that fail it, and the raw checkpoint a resume falls back to. Published to the markers topic,
 * keyed by tenantId/sessionId, at compaction time (cause check) or when a re-compaction changes the
 * frame depth under an emitted marker (cause depth_change). It carries no wall-clock time.
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
   * invalidated because a re-compaction moved the frame to another depth.
   */
  readonly cause: InvalidationCause;
  /**
   * Every failing condition, at most one per condition, in the order closure, retention, depth,
   * artifacts, unverifiable. Never empty.
   */
  readonly violations: readonly Violation[];
  /** Where a resume falls back to. */
  readonly fallback: RawCheckpoint;
}

/** Why a marker decision was made. */
export type InvalidationCause = 'check' | 'depth_change';

/** Every InvalidationCause, in schema order. */
export const InvalidationCauseSymbols: readonly InvalidationCause[] = ['check', 'depth_change'];

/** One failing condition and every id that fails it. */
export interface Violation {
  /** The condition that failed. */
  readonly condition: ViolationCondition;
  /**
   * Every id that fails it, sorted and unique: item ids (closure), disposition keys and constraint
   * ids (retention), artifact paths (artifacts), the node id (depth, unverifiable).
   */
  readonly ids: readonly string[];
  /** A deterministic, human-readable account of what failed for each id. */
  readonly detail: string;
}

/** The condition of validity that failed. */
export type ViolationCondition = 'closure' | 'retention' | 'depth' | 'artifacts' | 'unverifiable';

/** Every ViolationCondition, in schema order. */
export const ViolationConditionSymbols: readonly ViolationCondition[] = ['closure', 'retention', 'depth', 'artifacts', 'unverifiable'];

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

/**
 * One agent turn in a session's raw log (L0). Published by agent runtimes to turns.l0, keyed by
 * tenantId/sessionId. L0 is the source of truth: every summary, marker and projection is derived
 * from it and can be rebuilt from it.
 */
export interface TurnEvent {
  /** The tenant that owns the session. Non-empty. */
  readonly tenantId: string;
  /** The session, unique within its tenant. Non-empty. */
  readonly sessionId: string;
  /**
   * The turn's position in its session: 1 for the first turn, then contiguous with no gaps. A
   * redelivery with the same seq and turnId is a no-op; a seq past the next one is a gap; an
   * earlier seq with another turnId is refused.
   */
  readonly seq: number;
  /** The runtime's id for the turn; together with seq it makes redelivery idempotent. Non-empty. */
  readonly turnId: string;
  /**
   * When the turn happened, in milliseconds since the Unix epoch (UTC), as the runtime reports it.
   * Informational: no decision and no id depends on it.
   */
  readonly timestamp: number;
  /** Who produced the turn. */
  readonly role: TurnRole;
  /** The turn's text, as the model saw or produced it. */
  readonly content: string;
  /**
   * The turn's size in tokens as the runtime counted it; zero or more. Token budgets of compaction
   * policies are measured in it.
   */
  readonly tokenCount: number;
  /**
   * The state changes the turn made, applied in this order. Empty for a turn that changes no state.
   * A change that breaks the rules (closing an unknown item, say) is dead-lettered and skipped; the
   * rest of the turn still applies.
   */
  readonly changes: readonly (ItemOpened | ItemClosed | ItemDisposed | ArtifactRecorded)[];
  /**
   * The provider message the turn was converted from (by @tidemark/adapters); null for a turn
   * written as a TurnEvent. Informational: no decision and no id depends on it.
   */
  readonly original: OriginalMessage | null;
}

/** Who produced a turn, as in chat-completion messages. */
export type TurnRole = 'user' | 'assistant' | 'tool' | 'system';

/** Every TurnRole, in schema order. */
export const TurnRoleSymbols: readonly TurnRole[] = ['user', 'assistant', 'tool', 'system'];

/**
 * Something was opened that the next action may depend on until it ends: a tool call (a parallel
 * batch is one ItemOpened per call), an approval request awaiting a human, a file handle, a
 * subprocess, or a pending user constraint. An item ends when it is closed (ItemClosed) or disposed
 * (ItemDisposed with its itemId as the key).
 */
export interface ItemOpened {
  /** Discriminator of the state-change union: always item_opened. */
  readonly type: 'item_opened';
  /**
   * The item's id, unique within the session for its whole life (a tool-call id, say). Non-empty;
   * opening an id twice is refused.
   */
  readonly itemId: string;
  /** What kind of item was opened. */
  readonly kind: ItemKind;
  /** A short name: the tool's name, the file's path, the command, or the constraint in a few words. */
  readonly name: string;
  /** Optional detail: a tool call's arguments, what awaits approval, or a constraint's full text. */
  readonly detail: string | null;
  /**
   * For a subprocess or a file handle, the runtime's handle for it (a pid, a descriptor); null
   * otherwise.
   */
  readonly handle: string | null;
  /** For a subprocess, the path of its log; null otherwise. */
  readonly logPath: string | null;
}

/**
 * An open item ended with an outcome: a tool call returned, an approval was answered, a handle was
 * closed, a subprocess exited, a constraint was satisfied or withdrawn.
 */
export interface ItemClosed {
  /** Discriminator of the state-change union: always item_closed. */
  readonly type: 'item_closed';
  /**
   * The id of an item opened earlier in the session and still open. An unknown id is dead-lettered
   * as unknown_item; an item that already ended, as item_not_open.
   */
  readonly itemId: string;
  /** How the item ended. */
  readonly outcome: ItemOutcome;
  /** Optional detail: a result's gist, an error message, an exit code. */
  readonly detail: string | null;
}

/**
 * A negative state transition: something was rejected, failed or superseded. Summarizers tend to
 * drop these; the validator insists they are kept. The key is free-form so that things that are not
 * open items can be disposed (an approach, a plan: approach:add-column-backfill); when it names an
 * open item (a constraint, an approval request) that item ends here.
 */
export interface ItemDisposed {
  /** Discriminator of the state-change union: always item_disposed. */
  readonly type: 'item_disposed';
  /**
   * What was disposed: an item's id, or a free key for something that was never opened as an item
   * (approach:add-column-backfill). Non-empty. Disposing a key again replaces its disposition from
   * then on.
   */
  readonly itemKey: string;
  /**
   * Whether it was rejected (by a human or a rule), failed (when tried), or superseded (by
   * something else).
   */
  readonly disposition: Disposition;
  /** Why, in a sentence: what the next action must not repeat. */
  readonly reason: string;
  /**
   * For superseded, the key or item id that replaced it (required then); null for rejected and
   * failed.
   */
  readonly supersededBy: string | null;
}

/**
 * The agent created, modified or deleted a durable artifact (a file, usually) that a resumed agent
 * must know exists.
 */
export interface ArtifactRecorded {
  /** Discriminator of the state-change union: always artifact_recorded. */
  readonly type: 'artifact_recorded';
  /** The artifact's path or URI. Non-empty. */
  readonly path: string;
  /** What happened to the artifact. */
  readonly action: ArtifactAction;
  /**
   * A digest of the artifact's content after the action (sha256:<hex>, say); null when unknown or
   * deleted.
   */
  readonly digest: string | null;
}

/**
 * The message a turn was converted from, as the runtime's provider format had it, so that a resume
 * can give it back in that format.
 */
export interface OriginalMessage {
  /** The transcript format: openai-chat, openai-responses, anthropic or claude-code. */
  readonly format: string;
  /**
   * The message (a chat message, a Responses input item list, a Messages message, a Claude Code
   * line) as canonical JSON.
   */
  readonly json: string;
}
