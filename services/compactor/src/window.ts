import {
  asStrict,
  buildCompaction,
  planNext,
  priorNodeOf,
  summarizeStrict,
  summaryQuery,
  validateTurn,
  type BoundaryQuery,
  type Compaction,
  type CompactionSpan,
  type PlannedNode,
  type Policy,
  type StateAtBoundary,
  type Summarizer,
  type Summary,
  type SummaryInput,
  type SummarySpan,
  type TurnEvent,
} from '@tidemark/core';

// A session's compaction window and the one function that advances it. Everything here is a function
// of L0 and the policy: the window holds the uncompacted turns (their seq, size and L0 position; the
// text lives in the store), the first-attempt nodes not yet digested, and the newest first attempt of
// each tier (the next node's prior frame) — by what planning reads of them; their bodies live in the
// store too, read only when a summary quotes them. Every batch reads and writes the window, so it stays
// a few hundred bytes per turn or node, however long the summaries. No validator decision enters it, so a compactor that
// recomputes a window after a crash, or a replay, publishes the same bytes under the same ids.

/** An accepted, uncompacted turn: what planning needs, and where the turn lives in turns.l0. */
interface WindowTurn {
  readonly seq: number;
  readonly tokenCount: number;
  readonly partition: number;
  readonly offset: number;
}

export interface SessionWindow {
  readonly tenantId: string;
  readonly sessionId: string;
  /** The newest accepted seq: the fold's appliedSeq, by the same rules. */
  readonly lastSeq: number;
  readonly turns: readonly WindowTurn[];
  /** First attempts not yet digested (what planNext needs). */
  readonly nodes: readonly PlannedNode[];
  /** The newest first attempt of each tier, digested or not (what priorNodeOf needs). */
  readonly priors: readonly PlannedNode[];
}

export function emptyWindow(tenantId: string, sessionId: string): SessionWindow {
  return { tenantId, sessionId, lastSeq: 0, turns: [], nodes: [], priors: [] };
}

/** A session's window as the store holds it (null: none yet). */
export function windowOf(
  stored: SessionWindow | null,
  ref: { readonly tenantId: string; readonly sessionId: string },
): SessionWindow {
  return stored ?? emptyWindow(ref.tenantId, ref.sessionId);
}

/** The ids of the nodes a window names (their bodies are kept while it does). */
export function namedNodes(window: SessionWindow): Set<string> {
  return new Set([...window.nodes, ...window.priors].map((n) => n.compactionId));
}

/**
 * Whether a turn enters the window, by the fold's rules: the next seq, valid, is accepted; a seq
 * already accepted is a redelivery or a conflict (both leave the session as it is); a later seq is a
 * gap, refused (the materializer dead-letters it; here it is only left out).
 */
export type Admission = 'accepted' | 'duplicate' | 'gap' | 'invalid';

export function admit(
  window: SessionWindow,
  turn: TurnEvent,
  position: { readonly partition: number; readonly offset: number },
): { readonly window: SessionWindow; readonly admission: Admission } {
  if (!validateTurn(turn).ok) return { window, admission: 'invalid' };
  if (turn.seq <= window.lastSeq) return { window, admission: 'duplicate' };
  if (turn.seq > window.lastSeq + 1) return { window, admission: 'gap' };
  return {
    window: {
      ...window,
      lastSeq: turn.seq,
      turns: [...window.turns, { seq: turn.seq, tokenCount: turn.tokenCount, ...position }],
    },
    admission: 'accepted',
  };
}

/**
 * A node as produced, with the strict summary its repair publishes (null: its own is strict): what the
 * store keeps of each node the window names.
 */
export interface Compacted {
  readonly node: Compaction;
  readonly strict: Summary | null;
}

/** The state for a summary, or why it cannot be had now (the window then waits for a later batch). */
export type StateAnswer =
  | { readonly ok: true; readonly state: StateAtBoundary }
  | { readonly ok: false; readonly reason: 'timeout' | 'broken' | 'rebuilding' };

export interface CompactionContext {
  readonly policy: Policy;
  readonly generation: number;
  readonly compactorVersion: string;
  /** The policy's summarizer. */
  readonly summarizer: Summarizer;
  stateAt(query: BoundaryQuery): Promise<StateAnswer>;
  /** The turns of a session with these seqs, in seq order (the window holds positions, not text). */
  turns(tenantId: string, sessionId: string, seqs: readonly number[]): Promise<readonly TurnEvent[]>;
  /** The stored nodes of a session with these ids, in the order asked (the window names them). */
  nodes(tenantId: string, sessionId: string, ids: readonly string[]): Promise<readonly Compacted[]>;
  /** Called around each summarizer run, for latency metrics. */
  observe?(tier: number, seconds: number): void;
}

export type Advance =
  | { readonly ok: true; readonly window: SessionWindow; readonly produced: readonly Compacted[] }
  | {
      readonly ok: false;
      readonly reason: 'timeout' | 'broken' | 'rebuilding';
      /** What was done before the state went missing: still valid, and published. */
      readonly window: SessionWindow;
      readonly produced: readonly Compacted[];
    };

/**
 * Compacts whatever the policy says is due, step by step, until planNext is idle. `known` holds the
 * bodies of nodes at hand (those made earlier in the same batch); others are read from the context.
 */
export async function advance(
  start: SessionWindow,
  context: CompactionContext,
  known: Map<string, Compacted> = new Map(),
): Promise<Advance> {
  const { policy } = context;
  const { tenantId, sessionId } = start;
  let window = start;
  const produced: Compacted[] = [];
  for (;;) {
    const step = planNext(policy, { lastSeq: window.lastSeq, turns: window.turns, nodes: window.nodes });
    if (step.kind === 'idle') return { ok: true, window, produced };
    const { tier, fromSeq, toSeq } = step;
    const priorRef = priorNodeOf(window.priors, tier, fromSeq);
    const prior =
      priorRef === null ? null : (await bodiesOf([priorRef.compactionId], start, context, known))[0]!;
    const priorFrame = prior?.node ?? null;
    const answer = await context.stateAt(summaryQuery({ tenantId, sessionId, fromSeq, toSeq, priorFrame }));
    if (!answer.ok) return { ok: false, reason: answer.reason, window, produced };

    let spanOf: (strict: boolean) => SummarySpan;
    let span: CompactionSpan;
    let children: string[];
    switch (step.kind) {
      case 'summary': {
        const covered = window.turns.filter((t) => t.seq >= fromSeq && t.seq <= toSeq);
        const turns = await context.turns(tenantId, sessionId, range(fromSeq, toSeq));
        spanOf = () => ({ kind: 'turns', turns });
        span = {
          fromSeq,
          toSeq,
          l0Partition: covered[0]!.partition,
          fromOffset: covered[0]!.offset,
          toOffset: covered.at(-1)!.offset,
        };
        children = [];
        break;
      }
      case 'digest': {
        const stored = await bodiesOf(step.children, start, context, known);
        const nodes = stored.map((c) => c.node);
        spanOf = (strict) => ({ kind: 'nodes', nodes: strict ? stored.map(rendition) : nodes });
        span = {
          fromSeq,
          toSeq,
          l0Partition: nodes[0]!.span.l0Partition,
          fromOffset: nodes[0]!.span.fromOffset,
          toOffset: nodes.at(-1)!.span.toOffset,
        };
        children = [...step.children];
        break;
      }
      default: {
        const never: never = step;
        return never;
      }
    }

    const input: SummaryInput = {
      span: spanOf(false),
      state: answer.state,
      priorFrame,
      budget: budget(policy),
    };
    const began = performance.now();
    const summary = await context.summarizer.summarize(input);
    context.observe?.(tier, (performance.now() - began) / 1000);
    const node = buildCompaction({
      tenantId,
      sessionId,
      tier,
      generation: context.generation,
      policy,
      span,
      children,
      summary,
      summarizer: context.summarizer.name,
      compactorVersion: context.compactorVersion,
      repairOf: null,
      attempt: 0,
    });
    // The strict rendition is made now, while the span's turns are at hand: a repair, later, needs only
    // it (the state it is built from is the log's as of toSeq, which never changes). It reads the strict
    // renditions of the children and the prior, as core's reference does.
    let strict: Summary | null = null;
    if (context.summarizer.name !== 'strict') {
      const strictPrior = prior === null ? null : rendition(prior);
      let state = answer.state;
      if (strictPrior !== priorFrame) {
        const again = await context.stateAt(
          summaryQuery({ tenantId, sessionId, fromSeq, toSeq, priorFrame: strictPrior }),
        );
        if (!again.ok) return { ok: false, reason: again.reason, window, produced };
        state = again.state;
      }
      strict = summarizeStrict({
        span: spanOf(true),
        state,
        priorFrame: strictPrior,
        budget: budget(policy),
      });
    }
    produced.push({ node, strict });
    known.set(node.compactionId, { node, strict });
    const digested = new Set(children);
    const planned: PlannedNode = {
      compactionId: node.compactionId,
      tier: node.tier,
      span: node.span,
      tokenCount: node.tokenCount,
      attempt: node.attempt,
    };
    window = {
      ...window,
      turns: step.kind === 'summary' ? window.turns.filter((t) => t.seq > toSeq) : window.turns,
      nodes: [...window.nodes.filter((n) => !digested.has(n.compactionId)), planned],
      priors: [...window.priors.filter((n) => n.tier !== tier), planned],
    };
  }
}

/** The bodies of these nodes: from `known`, else read from the context (and then known). */
async function bodiesOf(
  ids: readonly string[],
  { tenantId, sessionId }: SessionWindow,
  context: CompactionContext,
  known: Map<string, Compacted>,
): Promise<Compacted[]> {
  const missing = ids.filter((id) => !known.has(id));
  if (missing.length > 0) {
    for (const stored of await context.nodes(tenantId, sessionId, missing)) {
      known.set(stored.node.compactionId, stored);
    }
  }
  return ids.map((id) => known.get(id)!);
}

function rendition({ node, strict }: Compacted): Compaction {
  return asStrict(node, strict);
}

export interface Ingested {
  readonly window: SessionWindow;
  readonly produced: readonly Compacted[];
  /** The turns admitted, in seq order (whatever else the batch held: redeliveries, conflicts, gaps). */
  readonly accepted: readonly TurnEvent[];
  readonly admissions: Readonly<Record<Admission, number>>;
  /** Why compaction stopped early, or null; the turns after the stop were not admitted. */
  readonly stopped: 'timeout' | 'broken' | 'rebuilding' | null;
}

/**
 * Admits a batch of a session's turns one at a time, planning after each, as the reference does: a
 * token-triggered L1 is cut at the first turn that crosses the budget, whatever the batch size.
 */
export async function ingest(
  start: SessionWindow,
  entries: readonly { readonly turn: TurnEvent; readonly partition: number; readonly offset: number }[],
  context: CompactionContext,
  onAccepted?: (turn: TurnEvent) => void,
): Promise<Ingested> {
  let window = start;
  const known = new Map<string, Compacted>();
  const produced: Compacted[] = [];
  const accepted: TurnEvent[] = [];
  const admissions: Record<Admission, number> = { accepted: 0, duplicate: 0, gap: 0, invalid: 0 };
  for (const { turn, partition, offset } of entries) {
    const admitted = admit(window, turn, { partition, offset });
    admissions[admitted.admission] += 1;
    if (admitted.admission !== 'accepted') continue;
    accepted.push(turn);
    onAccepted?.(turn);
    const result = await advance(admitted.window, context, known);
    window = result.window;
    produced.push(...result.produced);
    if (!result.ok) return { window, produced, accepted, admissions, stopped: result.reason };
  }
  return { window, produced, accepted, admissions, stopped: null };
}

function budget(policy: Policy): number {
  return policy.narrativeTokenBudget;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, index) => from + index);
}
