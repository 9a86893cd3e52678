import {
  TidemarkError,
  type Frame,
  type ResumeContext,
  type ResumeMessage,
  type ResumePlan,
} from '@tidemark/core';
import type { CompactionDue, Staleness } from './stale.js';

// What a resume and a status request answer: a result, or a refusal with its code and message (expected
// outcomes, not errors); and the one error a resume throws, when a dependency failed.

export interface ResumeResult {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly mode: ResumePlan['mode'];
  /** The marker the context starts from: the plan's marker (digest), the checkpoint's (raw), or null. */
  readonly markerId: string | null;
  /** The node whose narrative and state open the context; null when it is the raw log alone. */
  readonly nodeId: string | null;
  /** Raw mode only: why (no_marker, newest_invalid, newest_revoked). */
  readonly reason: 'no_marker' | 'newest_invalid' | 'newest_revoked' | null;
  readonly frame: Frame | null;
  /** The raw turns appended after the node: rawFromSeq..rawToSeq (none when rawToSeq < rawFromSeq). */
  readonly rawFromSeq: number;
  readonly rawToSeq: number;
  readonly messages: readonly ResumeMessage[];
  readonly contextHash: string;
  /**
   * Non-null when a compaction due for the session has not been decided within STALE_AFTER_MS: the
   * context is older than it should be. Not part of the context (nor of its hash).
   */
  readonly stale: Staleness | null;
  /**
   * Non-null when the session is stuck at `seq` (a refused turn: a seq gap, a conflicting seq): the
   * context ends before it, and nothing after it is applied until it is republished.
   */
  readonly broken: { readonly seq: number; readonly reason: string } | null;
  /**
   * Non-null while the session waits for a turn: the turn at expectedSeq was refused or never came (a
   * gap), so nothing after the watermark applies until it is published (again). `since`: when the
   * refusal was recorded (ISO 8601).
   */
  readonly stalled: Stall | null;
}

/** A session waiting for the turn at expectedSeq, since a time (null: recorded before times were kept). */
export interface Stall {
  readonly expectedSeq: number;
  readonly since: string | null;
}

/** Where a session stands: its plan, the projection's watermark, the next compaction due, staleness. */
export interface SessionStatus {
  readonly tenantId: string;
  readonly sessionId: string;
  /** The plan resumes follow now; null before the first marker decision. */
  readonly plan: {
    readonly mode: ResumePlan['mode'];
    /** Raw mode only: why (no_marker, newest_invalid, newest_revoked). */
    readonly reason: 'no_marker' | 'newest_invalid' | 'newest_revoked' | null;
    /** The marker the context starts from (digest: the newest; raw: the checkpoint's, or null). */
    readonly markerId: string | null;
    readonly nodeId: string | null;
    readonly frame: Frame | null;
    /** The first raw turn appended after the node. */
    readonly rawFromSeq: number;
  } | null;
  /** The projection's watermark: every turn up to it is applied. */
  readonly appliedSeq: number;
  /** The highest L0 seq a compaction of the session covers (0 before the first). */
  readonly lastCompactedSeq: number;
  readonly compaction: CompactionDue;
  readonly stale: Staleness | null;
  /**
   * Non-null when the session is stuck: a turn was refused (a seq gap, a conflicting seq) or a change
   * skipped at `seq`, so nothing from there on is applied or can be trusted until it is republished.
   */
  readonly broken: { readonly seq: number; readonly reason: string } | null;
  /**
   * Non-null while the session waits for a turn: the turn at expectedSeq was refused or never came (a
   * gap), so nothing after the watermark applies until it is published (again). `since`: when the
   * refusal was recorded (ISO 8601).
   */
  readonly stalled: Stall | null;
  /**
   * Whether the pipeline has caught up with the applied turns: no L1 they make due is undecided. A
   * runtime that published its turns waits for this (and for appliedSeq to reach its last seq).
   */
  readonly settled: boolean;
}

export type StatusRefusal = Extract<ResumeRefusal, 'session_not_found' | 'rebuilding'>;

export type StatusOutcome =
  | { readonly ok: true; readonly status: SessionStatus }
  | { readonly ok: false; readonly code: StatusRefusal; readonly message: string };

/** Why a session cannot be resumed right now. Expected outcomes, not errors. */
export type ResumeRefusal =
  /** Neither a plan nor a raw turn for this tenant and session. */
  | 'session_not_found'
  /** The session has turns but no marker decision was applied yet (no plan to resume by). */
  | 'no_plan'
  /** The plan starts from a node the worker has not stored yet (the compactions topic is behind). */
  | 'node_pending'
  /** The projection has not applied the turns up to the plan's boundary (it is behind or rebuilding). */
  | 'projection_behind'
  /** The resume store or the projection was lost and is being rebuilt from the topics. */
  | 'rebuilding'
  /** turns.l0 did not return every raw turn the projection says exists. */
  | 'l0_incomplete';

export type ResumeOutcome =
  | { readonly ok: true; readonly result: ResumeResult; readonly context: ResumeContext }
  | { readonly ok: false; readonly code: ResumeRefusal; readonly message: string };

/** The resume could not be served because a dependency failed (Redis, Kafka, the registry). */
export class ResumeUnavailableError extends TidemarkError<'resume_unavailable'> {
  override readonly name: string = 'ResumeUnavailableError';
  constructor(message: string, options: { cause: unknown }) {
    super('resume_unavailable', message, { retriable: true, cause: options.cause });
  }
}

export const refusalMessages: Readonly<Record<ResumeRefusal, string>> = {
  session_not_found: 'no such session',
  no_plan: 'the session has turns but no marker has been decided for it yet; retry later',
  node_pending: 'the compaction the plan starts from is not stored yet; retry shortly',
  projection_behind: 'the projection has not applied the session up to its plan yet; retry shortly',
  rebuilding: 'resume state is being rebuilt from the log; retry shortly',
  l0_incomplete: 'turns.l0 did not return every raw turn of the span; retry shortly',
};

export function refusal(code: ResumeRefusal): ResumeOutcome {
  return { ok: false, code, message: refusalMessages[code] };
}
