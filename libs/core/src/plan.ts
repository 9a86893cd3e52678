import { TidemarkCoreError } from './errors.js';
import type { CompactionStep, PlannedNode, Policy, SessionProgress } from './model.js';

// Compaction planning: given a policy and a session's progress, what to compact next. One step at a
// time; the compactor applies it and asks again until the answer is idle. Digests come first, lowest
// tier first, so a tree is completed bottom-up before the next L1 is cut. A tighter digest budget makes
// digests of fewer nodes, hence more nodes per tier, hence deeper trees (L3 and beyond).
//
// The tree is built from first attempts only (attempt 0). A repair answers a MarkerInvalid, which a
// distributed compactor receives whenever the validator gets to it: if repairs took part in planning,
// a digest's children (and so its bytes) would depend on whether the repair had arrived before the
// digest was cut. Repairs hang off the tree beside the node they repair; they never shape it.

export const defaultPolicy: Policy = {
  l1EveryTurns: 40,
  l1TokenBudget: null,
  digestFanIn: 4,
  digestTokenBudget: null,
  maxDepth: 6,
  narrativeTokenBudget: 400,
  summarizer: 'strict',
};

/** The default policy with the given values, checked. */
export function definePolicy(values: Partial<Policy> = {}): Policy {
  const policy: Policy = { ...defaultPolicy, ...values };
  const positive = (name: keyof Policy, value: number | null, min: number, nullable: boolean): void => {
    if (value === null && nullable) return;
    if (value === null || !Number.isSafeInteger(value) || value < min) {
      throw new TidemarkCoreError(
        'invalid_policy',
        `policy.${name} must be an integer of at least ${min}${nullable ? ' or null' : ''}`,
      );
    }
  };
  positive('l1EveryTurns', policy.l1EveryTurns, 1, false);
  positive('l1TokenBudget', policy.l1TokenBudget, 1, true);
  positive('digestFanIn', policy.digestFanIn, 2, false);
  positive('digestTokenBudget', policy.digestTokenBudget, 1, true);
  positive('maxDepth', policy.maxDepth, 1, false);
  positive('narrativeTokenBudget', policy.narrativeTokenBudget, 1, false);
  if (policy.summarizer.length === 0) {
    throw new TidemarkCoreError('invalid_policy', 'policy.summarizer must be named');
  }
  // Only the known keys: an unknown one would change the policyId without changing behaviour.
  const {
    l1EveryTurns,
    l1TokenBudget,
    digestFanIn,
    digestTokenBudget,
    maxDepth,
    narrativeTokenBudget,
    summarizer,
  } = policy;
  return {
    l1EveryTurns,
    l1TokenBudget,
    digestFanIn,
    digestTokenBudget,
    maxDepth,
    narrativeTokenBudget,
    summarizer,
  };
}

export function planNext(policy: Policy, progress: SessionProgress): CompactionStep {
  const nodes = firstAttempts(progress.nodes);
  for (let tier = 1; tier < policy.maxDepth; tier++) {
    // Asked after every turn, and most tiers hold fewer than two nodes: those are passed over unbuilt.
    if (countOfTier(nodes, tier) < 2) continue;
    const pending = undigested(nodes, tier);
    if (pending.length < 2) continue;
    const take = digestSize(policy, pending);
    if (take > 0) {
      const children = pending.slice(0, take);
      return {
        kind: 'digest',
        tier: tier + 1,
        fromSeq: children[0]!.span.fromSeq,
        toSeq: children.at(-1)!.span.toSeq,
        children: children.map((node) => node.compactionId),
      };
    }
  }

  // Every tier ends where its newest node ends, so any node's boundary will do; digested nodes may be left out.
  const boundary = nodes.reduce((seq, node) => Math.max(seq, node.span.toSeq), 0);
  const available = progress.lastSeq - boundary;
  if (available >= policy.l1EveryTurns) {
    return { kind: 'summary', tier: 1, fromSeq: boundary + 1, toSeq: boundary + policy.l1EveryTurns };
  }
  if (policy.l1TokenBudget !== null) {
    let tokens = 0;
    const turns = progress.turns
      .filter((turn) => turn.seq > boundary && turn.seq <= progress.lastSeq)
      .sort((a, b) => a.seq - b.seq);
    for (const [index, turn] of turns.entries()) {
      // Only a contiguous run from the boundary can be cut.
      if (turn.seq !== boundary + 1 + index) break;
      tokens += turn.tokenCount;
      if (tokens >= policy.l1TokenBudget) {
        return { kind: 'summary', tier: 1, fromSeq: boundary + 1, toSeq: turn.seq };
      }
    }
  }
  return { kind: 'idle' };
}

/** How many of the pending nodes of a tier to digest now (0: not yet). */
function digestSize(policy: Policy, pending: readonly PlannedNode[]): number {
  if (pending.length >= policy.digestFanIn) return policy.digestFanIn;
  if (policy.digestTokenBudget === null) return 0;
  let tokens = 0;
  for (const [index, node] of pending.entries()) {
    tokens += node.tokenCount;
    // The shortest run of at least two nodes that exceeds the budget.
    if (index >= 1 && tokens > policy.digestTokenBudget) return index + 1;
  }
  return 0;
}

function countOfTier(nodes: readonly PlannedNode[], tier: number): number {
  let count = 0;
  for (const node of nodes) if (node.tier === tier) count += 1;
  return count;
}

/** Up to this many nodes, firstAttempts checks them pairwise instead of mapping them. */
const pairwiseCheckedUpTo = 32;

/** One node per tier and span, the first attempt: repairs never shape the tree (see above). */
function firstAttempts(nodes: readonly PlannedNode[]): readonly PlannedNode[] {
  // A compactor's window holds a few first attempts, one per span: then they are the answer as they are
  // (checked pairwise, which allocates nothing; a longer list, such as a whole history, is mapped).
  if (
    nodes.length <= pairwiseCheckedUpTo &&
    nodes.every((node, i) => node.attempt === 0 && !spanBefore(nodes, i))
  ) {
    return nodes;
  }
  const bySpan = new Map<string, PlannedNode>();
  for (const node of nodes) {
    if (node.attempt !== 0) continue;
    bySpan.set(`${node.tier}:${node.span.fromSeq}:${node.span.toSeq}`, node);
  }
  return [...bySpan.values()];
}

/** Whether a node before `index` has the same tier and span as the node at it. */
function spanBefore(nodes: readonly PlannedNode[], index: number): boolean {
  const { tier, span } = nodes[index]!;
  for (let i = 0; i < index; i++) {
    const other = nodes[i]!;
    if (other.tier === tier && other.span.fromSeq === span.fromSeq && other.span.toSeq === span.toSeq)
      return true;
  }
  return false;
}

/**
 * The prior frame of a new node of the given tier starting at fromSeq: the newest first-attempt node of
 * the same tier (and generation: pass one generation's nodes) that ends before the span, or null. It is
 * a function of L0 and the policy alone, so a compactor computes it without waiting for any validator
 * decision, and the node's bytes never depend on timing. A repair gets the prior of the node it repairs.
 */
export function priorNodeOf<T extends Pick<PlannedNode, 'tier' | 'span' | 'attempt'>>(
  nodes: readonly T[],
  tier: number,
  fromSeq: number,
): T | null {
  let prior: T | null = null;
  for (const node of nodes) {
    if (node.attempt !== 0 || node.tier !== tier || node.span.toSeq >= fromSeq) continue;
    if (prior === null || node.span.toSeq > prior.span.toSeq) prior = node;
  }
  return prior;
}

/** The nodes of a tier no node one tier up covers yet, in seq order. */
function undigested(nodes: readonly PlannedNode[], tier: number): PlannedNode[] {
  const above = nodes.filter((node) => node.tier === tier + 1);
  const pending = nodes.filter(
    (node) =>
      node.tier === tier &&
      !above.some(
        (parent) => parent.span.fromSeq <= node.span.fromSeq && node.span.toSeq <= parent.span.toSeq,
      ),
  );
  // Nodes are listed as they were made, in seq order within a tier: sorted only when they are not.
  for (let index = 1; index < pending.length; index++) {
    if (pending[index - 1]!.span.fromSeq > pending[index]!.span.fromSeq) {
      return pending.sort((a, b) => a.span.fromSeq - b.span.fromSeq);
    }
  }
  return pending;
}
