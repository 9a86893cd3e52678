// The domain model: the wire shapes (generated from schemas/*.avsc, never written twice) under the
// names the core uses, and the pure-only types that never go on the wire. One place per concept.
import type {
  ArtifactAction,
  Claims,
  Compaction,
  Disposition,
  ItemKind,
  ItemOutcome,
  MarkerEmitted,
  MarkerInvalid,
  OriginalMessage,
  RawCheckpoint,
  TurnEvent,
  TurnRole,
} from './wire/index.generated.js';

export type {
  ArtifactAction,
  ArtifactClaim,
  ArtifactRecorded,
  Claims,
  Compaction,
  CompactionSpan,
  ConstraintClaim,
  DeadLetter,
  DeadLetterReason,
  Disposition,
  DispositionClaim,
  ItemKind,
  ItemOpened,
  ItemOutcome,
  MarkerEmitted,
  MarkerInvalid,
  MarkerRevocation,
  OriginalMessage,
  RawCheckpoint,
  RegressionDetected,
  ResolvedClaim,
  RuledOut,
  TurnEvent,
  TurnRole,
  UnresolvedClaim,
  Violation,
  ViolationCondition,
} from './wire/index.generated.js';

/** One state change of a turn: a union discriminated on `type`. */
export type StateChange = TurnEvent['changes'][number];

/** The validator's decision about one marker candidate. */
export type MarkerDecision = MarkerEmitted | MarkerInvalid;

// ---------------------------------------------------------------------------------------------------
// Frames

/** The node currently framing a session: the newest top-tier node of the newest generation. */
export interface Frame {
  readonly nodeId: string;
  readonly depth: number;
  readonly generation: number;
}

// ---------------------------------------------------------------------------------------------------
// Session state: the answers the fold and the Redis projection both give

/** How an item ended: closed with an outcome, or disposed (its id was the key of an ItemDisposed). */
export type ItemEnd =
  | {
      readonly type: 'closed';
      readonly outcome: ItemOutcome;
      readonly detail: string | null;
      readonly seq: number;
    }
  | { readonly type: 'disposed'; readonly disposition: Disposition; readonly seq: number };

/** An item as of a boundary: `end` is null while it is open at that boundary. */
export interface ItemFact {
  readonly itemId: string;
  readonly kind: ItemKind;
  readonly name: string;
  readonly detail: string | null;
  readonly handle: string | null;
  readonly logPath: string | null;
  readonly openedSeq: number;
  readonly end: ItemEnd | null;
}

/** A disposition as the log has it. */
export interface DispositionFact {
  readonly itemKey: string;
  readonly disposition: Disposition;
  readonly reason: string;
  readonly supersededBy: string | null;
  readonly seq: number;
}

/** An artifact's latest action as the log has it. */
export interface ArtifactFact {
  readonly path: string;
  readonly action: ArtifactAction;
  readonly digest: string | null;
  readonly seq: number;
}

/**
 * What the check asks of the materialized state for a candidate spanning fromSeq..toSeq. The claimed
 * ids, keys and paths are listed so that a store can answer their lookups in one round trip.
 */
export interface BoundaryQuery {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly itemIds: readonly string[];
  readonly itemKeys: readonly string[];
  readonly paths: readonly string[];
}

/**
 * The session's state at a candidate's boundary, as the fold (reference) and the Redis projection both
 * answer a BoundaryQuery. Lists are sorted by id. Everything is "as of toSeq": later turns are invisible.
 * Completeness is checked against the span lists; the truth of each claim against the lookups.
 */
export interface StateAtBoundary {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  /** The session's contiguous watermark: every turn up to it, and none after, is applied. */
  readonly appliedSeq: number;
  /** Items open at toSeq: opened at or before it, not ended at or before it (wherever they were opened). */
  readonly open: readonly ItemFact[];
  /** Items closed inside fromSeq..toSeq (not disposed ones: those are in `disposed`). */
  readonly closed: readonly ItemFact[];
  /** For each key disposed inside fromSeq..toSeq, its latest disposition inside the span. */
  readonly disposed: readonly DispositionFact[];
  /** For each path recorded inside fromSeq..toSeq, its latest action at or before toSeq (deleted ones too). */
  readonly artifacts: readonly ArtifactFact[];
  /** Lookups for the query's ids, keys and paths as of toSeq; an absent entry means the log has none. */
  readonly lookup: {
    readonly items: ReadonlyMap<string, ItemFact>;
    readonly dispositions: ReadonlyMap<string, DispositionFact>;
    readonly artifacts: ReadonlyMap<string, ArtifactFact>;
  };
}

// ---------------------------------------------------------------------------------------------------
// Summaries

/** What a summarizer returns: the node's narrative and claims, and their size. */
export interface Summary {
  readonly narrative: string;
  readonly claims: Claims;
  /** estimateTokens(narrative) + estimateTokens(canonicalJson(claims)). */
  readonly tokenCount: number;
}

/** What is summarised: L0 turns (an L1 summary) or nodes one tier lower (an L2+ digest). */
export type SummarySpan =
  | { readonly kind: 'turns'; readonly turns: readonly TurnEvent[] }
  | { readonly kind: 'nodes'; readonly nodes: readonly Compaction[] };

export interface SummaryInput {
  readonly span: SummarySpan;
  /** The log's state for the span (see summaryQuery): where the strict summarizer takes its claims from. */
  readonly state: StateAtBoundary;
  /**
   * The node whose earlier facts are carried forward: the newest first-attempt node of the same tier
   * and generation before the span (planNext's priorNodeOf), or null. Never a validator decision.
   */
  readonly priorFrame: Compaction | null;
  /** The narrative's token budget. */
  readonly budget: number;
}

/** One interface for every summarizer; the check decides whether its output may be trusted. */
export interface Summarizer {
  /** Recorded in Compaction.summarizer: strict, narrative, model:<model>. */
  readonly name: string;
  summarize(input: SummaryInput): Promise<Summary>;
}

// ---------------------------------------------------------------------------------------------------
// Compaction planning

/** A compaction policy. Its canonical JSON is hashed into policyId, and so into every compaction id. */
export interface Policy {
  /** An L1 summary every this many turns (default 40). */
  readonly l1EveryTurns: number;
  /** Or sooner, once the uncompacted turns reach this many tokens; null for no token trigger. */
  readonly l1TokenBudget: number | null;
  /** A digest one tier up once this many nodes of a tier are not yet digested (default 4). */
  readonly digestFanIn: number;
  /** Or sooner, once those nodes exceed this many tokens together (at least two nodes); null for none. */
  readonly digestTokenBudget: number | null;
  /** The deepest tier the planner builds (default 6). */
  readonly maxDepth: number;
  /** The narrative budget of every node, in tokens (default 400). */
  readonly narrativeTokenBudget: number;
  /** The summarizer the policy runs: strict, narrative, or model:<model>. */
  readonly summarizer: string;
}

/** The node facts the planner needs; a Compaction has them all. */
export type PlannedNode = Pick<Compaction, 'compactionId' | 'tier' | 'span' | 'tokenCount' | 'attempt'>;

/** A session's progress as the compactor sees it. */
export interface SessionProgress {
  /** The newest committed L0 turn that may be compacted. */
  readonly lastSeq: number;
  /** Token counts of turns after the newest L1 boundary (earlier ones are ignored). */
  readonly turns: readonly { readonly seq: number; readonly tokenCount: number }[];
  /**
   * This generation's nodes: at least those not yet digested (passing all is correct, but costs more).
   * Repairs may be listed and are ignored: the tree is built from first attempts.
   */
  readonly nodes: readonly PlannedNode[];
}

/** What to compact next. */
export type CompactionStep =
  | { readonly kind: 'summary'; readonly tier: 1; readonly fromSeq: number; readonly toSeq: number }
  | {
      readonly kind: 'digest';
      readonly tier: number;
      readonly fromSeq: number;
      readonly toSeq: number;
      /** The nodes one tier lower it digests, in seq order. */
      readonly children: readonly string[];
    }
  | { readonly kind: 'idle' };

// ---------------------------------------------------------------------------------------------------
// Resume

/** A marker a resume can start from. */
export interface MarkerRef {
  readonly markerId: string;
  readonly compactionId: string;
  readonly depth: number;
  readonly generation: number;
  readonly toSeq: number;
  readonly l0Partition: number;
  readonly l0Offset: number;
}

/**
 * How a session resumes: wholesale from the newest marker at the frame depth (digest), or wholesale
 * from the raw checkpoint (raw). Never a distrusted node with patches.
 */
export type ResumePlan =
  | {
      readonly mode: 'digest';
      readonly tenantId: string;
      readonly sessionId: string;
      readonly frame: Frame;
      readonly marker: MarkerRef;
      /** The first raw turn to append after the node. */
      readonly rawFromSeq: number;
    }
  | {
      readonly mode: 'raw';
      readonly tenantId: string;
      readonly sessionId: string;
      readonly frame: Frame | null;
      readonly checkpoint: RawCheckpoint;
      /** The first raw turn to append after the checkpoint's node (1 from the session start). */
      readonly rawFromSeq: number;
      /**
       * no_marker: nothing decided at the frame depth yet; newest_invalid: the newest marker there failed;
       * newest_revoked: an operator revoked it.
       */
      readonly reason: 'no_marker' | 'newest_invalid' | 'newest_revoked';
    };

/** One message of a resume context, in the OpenAI chat shape. */
export interface ResumeMessage {
  readonly role: TurnRole;
  readonly content: string;
  /** A raw turn's provider message, when it was converted from a transcript (@tidemark/adapters). */
  readonly original?: OriginalMessage;
}

/** The context an agent resumes with, assembled canonically: the same plan always gives the same bytes. */
export interface ResumeContext {
  readonly plan: ResumePlan;
  readonly messages: readonly ResumeMessage[];
  /** The canonical JSON the hash is computed over. */
  readonly canonical: string;
  /** SHA-256 (hex) of `canonical`. */
  readonly contextHash: string;
}
