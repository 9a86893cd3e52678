// @tidemark/core/testing: helpers for other packages' tests, kept out of the package's main face.
import { buildCompaction } from './compaction.js';
import { foldTurns } from './fold.js';
import { definePolicy } from './plan.js';
import { summaryQuery } from './summarize/claims.js';
import { summarizeStrict } from './summarize/strict.js';
import type { Claims, Compaction, Policy, TurnEvent } from './model.js';

export interface StrictNodeOptions {
  /** The session's turns (seq 1, 2, 3 …); the node covers fromSeq..toSeq of them. */
  readonly turns: readonly TurnEvent[];
  readonly fromSeq: number;
  readonly toSeq: number;
  /** Default: core's default policy. */
  readonly policy?: Policy;
  /** The summarizer the node names (default `strict`). */
  readonly summarizer?: string;
  /** Edits the strict claims, as a lossy summarizer would (default none). */
  readonly edit?: (claims: Claims) => Partial<Claims>;
}

/**
 * The L1 node a compactor writes over fromSeq..toSeq of a session, summarised strictly (its claims edited
 * if asked), at L0 partition 0 with offset = seq − 1.
 */
export function strictL1Node(options: StrictNodeOptions): Compaction {
  const { turns, fromSeq, toSeq } = options;
  const policy = options.policy ?? definePolicy();
  const { tenantId, sessionId } = turns[0]!;
  const { fold } = foldTurns(tenantId, sessionId, turns);
  const state = fold.stateAt(summaryQuery({ tenantId, sessionId, fromSeq, toSeq, priorFrame: null }));
  const summary = summarizeStrict({
    span: { kind: 'turns', turns: turns.filter((t) => t.seq >= fromSeq && t.seq <= toSeq) },
    state,
    priorFrame: null,
    budget: policy.narrativeTokenBudget,
  });
  const edit = options.edit ?? (() => ({}));
  return buildCompaction({
    tenantId,
    sessionId,
    tier: 1,
    generation: 1,
    policy,
    span: { fromSeq, toSeq, l0Partition: 0, fromOffset: fromSeq - 1, toOffset: toSeq - 1 },
    children: [],
    summary: { ...summary, claims: { ...summary.claims, ...edit(summary.claims) } },
    summarizer: options.summarizer ?? 'strict',
    compactorVersion: 'test',
    repairOf: null,
    attempt: 0,
  });
}
