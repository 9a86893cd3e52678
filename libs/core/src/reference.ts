import { boundaryQuery, type CheckOptions } from './check.js';
import { asStrict, buildCompaction, strictRepairOf } from './compaction.js';
import { invalidInput } from './errors.js';
import type { ApplyResult } from './fold-checks.js';
import { SessionFold } from './fold.js';
import type { Compaction, Frame, MarkerDecision, Policy, Summary, SummaryInput, TurnEvent } from './model.js';
import { planNext, priorNodeOf } from './plan.js';
import { decide, evolve, frameOf, initialState, type SessionFrameState } from './session-frame.js';
import { summaryQuery } from './summarize/claims.js';
import { summarizeNarrative } from './summarize/narrative.js';
import { summarizeStrict } from './summarize/strict.js';

// The whole pipeline in one pure, synchronous function: fold, plan, summarize (a lossy node followed by
// its strict repair), decide with the session decider. It is the reference the services are tested against (the same
// turns and policy must yield the same compactions and decisions, byte for byte), and what benchmarks
// and demos compare a run with. Only the deterministic summarizers run here.

export interface ReferenceOptions {
  readonly policy: Policy;
  readonly generation?: number;
  readonly compactorVersion?: string;
  readonly l0Partition?: number;
  /** The turns.l0 offset of a seq (default seq - 1: one session alone in its partition). */
  readonly offsetOf?: (seq: number) => number;
  /**
   * Strict repairs: 0 publishes none; 1 or more publishes one after every node a lossy summarizer
   * wrote (default 1). One is all there is: a repair's own repair would restate the same strict claims.
   */
  readonly maxRepairs?: number;
  readonly check?: CheckOptions;
}

export interface ReferenceRun {
  readonly fold: SessionFold;
  readonly results: readonly ApplyResult[];
  /** Every compaction, in the order produced (a strict repair right after the node it repairs). */
  readonly compactions: readonly Compaction[];
  /** Every marker decision, in the order published. */
  readonly decisions: readonly MarkerDecision[];
  /** The session decider's state after them, and the frame it names. */
  readonly state: SessionFrameState;
  readonly frame: Frame | null;
}

const summarizers: Readonly<Record<string, (input: SummaryInput) => Summary>> = {
  strict: summarizeStrict,
  narrative: summarizeNarrative,
};

export function runReference(turns: readonly TurnEvent[], options: ReferenceOptions): ReferenceRun {
  const first = turns[0];
  if (first === undefined) throw invalidInput('a reference run needs turns');
  const { policy } = options;
  const summarize = summarizers[policy.summarizer];
  if (summarize === undefined) {
    throw invalidInput(`the reference runs strict or narrative, not ${policy.summarizer}`);
  }
  const generation = options.generation ?? 1;
  const compactorVersion = options.compactorVersion ?? 'reference';
  const l0Partition = options.l0Partition ?? 0;
  const offsetOf = options.offsetOf ?? ((seq: number) => seq - 1);
  const maxRepairs = options.maxRepairs ?? 1;

  const { tenantId, sessionId } = first;
  const fold = new SessionFold(tenantId, sessionId);
  const results: ApplyResult[] = [];
  const bySeq = new Map<number, TurnEvent>();
  const compactions: Compaction[] = [];
  const byId = new Map<string, Compaction>();
  const decisions: MarkerDecision[] = [];
  let state = initialState;

  // The strict rendition of every node compacted by a lossy summarizer: the summary its strict repair
  // publishes. It is made with the span at hand, from the strict renditions of the node's children and
  // prior frame, so a repaired digest never quotes a lossy child, and it depends on L0 and the policy
  // alone.
  const renditions = new Map<string, Summary>();
  const rendition = (node: Compaction): Compaction =>
    asStrict(node, renditions.get(node.compactionId) ?? null);

  const inputFor = (
    span: { fromSeq: number; toSeq: number },
    tier: number,
    children: readonly string[],
    strict: boolean,
  ): SummaryInput => {
    // Not the raw checkpoint's node: that depends on validator decisions, which a distributed compactor
    // may not have yet when it compacts the next span. The prior is a function of L0 and the policy.
    const prior = priorNodeOf(compactions, tier, span.fromSeq);
    const priorFrame = strict && prior !== null ? rendition(prior) : prior;
    const nodes = children.map((id) => byId.get(id)!);
    return {
      span:
        tier === 1
          ? { kind: 'turns', turns: range(span.fromSeq, span.toSeq).map((seq) => bySeq.get(seq)!) }
          : { kind: 'nodes', nodes: strict ? nodes.map(rendition) : nodes },
      state: fold.stateAt(summaryQuery({ tenantId, sessionId, ...span, priorFrame })),
      priorFrame,
      budget: policy.narrativeTokenBudget,
    };
  };

  const validate = (node: Compaction): void => {
    compactions.push(node);
    byId.set(node.compactionId, node);
    const made = decide({ node, state: fold.stateAt(boundaryQuery(node)), options: options.check }, state);
    for (const decision of made) state = evolve(state, decision);
    decisions.push(...made);
  };

  /** A first attempt, then (when a lossy summarizer wrote it) its strict repair, as the compactor publishes them. */
  const compact = (span: { fromSeq: number; toSeq: number }, tier: number, children: readonly string[]) => {
    const node = buildCompaction({
      tenantId,
      sessionId,
      tier,
      generation,
      policy,
      span: { ...span, l0Partition, fromOffset: offsetOf(span.fromSeq), toOffset: offsetOf(span.toSeq) },
      children,
      summary: summarize(inputFor(span, tier, children, false)),
      summarizer: policy.summarizer,
      compactorVersion,
      repairOf: null,
      attempt: 0,
    });
    const strict =
      node.summarizer === 'strict' ? null : summarizeStrict(inputFor(span, tier, children, true));
    if (strict !== null) renditions.set(node.compactionId, strict);
    validate(node);
    if (strict !== null && maxRepairs > 0) validate(strictRepairOf(node, strict));
  };

  let pending: { seq: number; tokenCount: number }[] = [];
  for (const turn of turns) {
    const result = fold.apply(turn);
    results.push(result);
    if (!result.ok || result.duplicate) continue;
    bySeq.set(turn.seq, turn);
    pending.push({ seq: turn.seq, tokenCount: turn.tokenCount });
    for (;;) {
      const step = planNext(policy, { lastSeq: fold.appliedSeq, turns: pending, nodes: compactions });
      if (step.kind === 'idle') break;
      const children = step.kind === 'digest' ? step.children : [];
      // Only the seqs: the step's other fields (kind, tier, children) are not part of a span.
      const span = { fromSeq: step.fromSeq, toSeq: step.toSeq };
      compact(span, step.tier, children);
      if (step.kind === 'summary') pending = pending.filter((t) => t.seq > step.toSeq);
    }
  }
  return { fold, results, compactions, decisions, state, frame: frameOf(state) };
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, index) => from + index);
}
