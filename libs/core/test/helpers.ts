// Small builders shared by the tests: turns by hand, and a candidate node for a span of a session.
import {
  boundaryQuery,
  buildCompaction,
  definePolicy,
  foldTurns,
  summarizeStrict,
  summaryQuery,
  type Claims,
  type Compaction,
  type Frame,
  type ItemKind,
  type SessionFold,
  type StateChange,
  type Summary,
  type SummaryInput,
  type TurnEvent,
  type TurnRole,
} from '../src/index.js';

export const tenantId = 'tenant-t';
export const sessionId = 'session-t';
export const policy = definePolicy();

export function turn(seq: number, role: TurnRole, content: string, changes: StateChange[] = []): TurnEvent {
  return {
    tenantId,
    sessionId,
    seq,
    turnId: `turn-${seq}`,
    timestamp: 1_767_225_600_000 + seq * 1000,
    role,
    content,
    tokenCount: Math.ceil(content.length / 4),
    changes,
    original: null,
  };
}

/** Turns seq from..to of filler, so that hand-written sessions reach realistic lengths. */
export function filler(from: number, to: number): TurnEvent[] {
  const turns: TurnEvent[] = [];
  for (let seq = from; seq <= to; seq++)
    turns.push(turn(seq, seq % 2 === 0 ? 'assistant' : 'tool', `working on step ${seq}`));
  return turns;
}

export const opened = (
  itemId: string,
  kind: ItemKind,
  name = itemId,
  detail: string | null = null,
): StateChange => ({
  type: 'item_opened',
  itemId,
  kind,
  name,
  detail,
  handle: kind === 'subprocess' ? `pid-${itemId}` : null,
  logPath: kind === 'subprocess' ? `/logs/${itemId}.log` : null,
});
export const closed = (itemId: string, outcome: 'ok' | 'error' | 'cancelled' = 'ok'): StateChange => ({
  type: 'item_closed',
  itemId,
  outcome,
  detail: null,
});
export const disposed = (
  itemKey: string,
  disposition: 'rejected' | 'failed' | 'superseded',
  reason: string,
  supersededBy: string | null = null,
): StateChange => ({
  type: 'item_disposed',
  itemKey,
  disposition,
  reason,
  supersededBy,
});
export const artifact = (
  path: string,
  action: 'created' | 'modified' | 'deleted',
  digest: string | null = null,
): StateChange => ({
  type: 'artifact_recorded',
  path,
  action,
  digest,
});

export function fold(turns: readonly TurnEvent[]): SessionFold {
  const first = turns[0]!;
  return foldTurns(first.tenantId, first.sessionId, turns).fold;
}

/** An L1 node over fromSeq..toSeq of the turns, summarised by `summarize` (strict by default). */
export function l1(
  turns: readonly TurnEvent[],
  fromSeq: number,
  toSeq: number,
  options: {
    summarize?: (input: SummaryInput) => Summary;
    priorFrame?: Compaction | null;
    generation?: number;
  } = {},
): Compaction {
  const first = turns[0]!;
  const priorFrame = options.priorFrame ?? null;
  const state = fold(turns).stateAt(
    summaryQuery({ tenantId: first.tenantId, sessionId: first.sessionId, fromSeq, toSeq, priorFrame }),
  );
  const span = turns.filter((t) => t.seq >= fromSeq && t.seq <= toSeq);
  const summary = (options.summarize ?? summarizeStrict)({
    span: { kind: 'turns', turns: span },
    state,
    priorFrame,
    budget: policy.narrativeTokenBudget,
  });
  return node(first, 1, fromSeq, toSeq, [], summary, options.generation);
}

/** A digest node over the given children, summarised by `summarize` (strict by default). */
export function digest(
  turns: readonly TurnEvent[],
  children: readonly Compaction[],
  options: { summarize?: (input: SummaryInput) => Summary; priorFrame?: Compaction | null } = {},
): Compaction {
  const first = turns[0]!;
  const fromSeq = children[0]!.span.fromSeq;
  const toSeq = children.at(-1)!.span.toSeq;
  const priorFrame = options.priorFrame ?? null;
  const state = fold(turns).stateAt(
    summaryQuery({ tenantId: first.tenantId, sessionId: first.sessionId, fromSeq, toSeq, priorFrame }),
  );
  const summary = (options.summarize ?? summarizeStrict)({
    span: { kind: 'nodes', nodes: children },
    state,
    priorFrame,
    budget: policy.narrativeTokenBudget,
  });
  return node(
    first,
    children[0]!.tier + 1,
    fromSeq,
    toSeq,
    children.map((c) => c.compactionId),
    summary,
    children[0]!.generation,
  );
}

function node(
  first: TurnEvent,
  tier: number,
  fromSeq: number,
  toSeq: number,
  children: string[],
  summary: Summary,
  generation = 1,
): Compaction {
  return buildCompaction({
    tenantId: first.tenantId,
    sessionId: first.sessionId,
    tier,
    generation,
    policy,
    span: { fromSeq, toSeq, l0Partition: 0, fromOffset: fromSeq - 1, toOffset: toSeq - 1 },
    children,
    summary,
    summarizer: 'test',
    compactorVersion: 'test',
    repairOf: null,
    attempt: 0,
  });
}

/** The node with its claims replaced (a summarizer that lost or invented something). */
export function withClaims(candidate: Compaction, change: (claims: Claims) => Partial<Claims>): Compaction {
  return { ...candidate, claims: { ...candidate.claims, ...change(candidate.claims) } };
}

/** The state check() needs for the candidate, from the turns. */
export function stateFor(turns: readonly TurnEvent[], candidate: Compaction) {
  return fold(turns).stateAt(boundaryQuery(candidate));
}

export function frameAt(depth: number, generation = 1): Frame {
  return { nodeId: `frame-l${depth}`, depth, generation };
}
