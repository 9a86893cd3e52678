import { describe, expect, it } from 'vitest';
import {
  definePolicy,
  generateSession,
  planNext,
  policyIdOf,
  priorNodeOf,
  runReference,
  TidemarkCoreError,
  type PlannedNode,
  type SessionProgress,
} from '../src/index.js';

let counter = 0;
const node = (tier: number, fromSeq: number, toSeq: number, tokenCount = 100, attempt = 0): PlannedNode => ({
  compactionId: `n${++counter}-L${tier}-${fromSeq}-${toSeq}`,
  tier,
  span: { fromSeq, toSeq, l0Partition: 0, fromOffset: fromSeq - 1, toOffset: toSeq - 1 },
  tokenCount,
  attempt,
});
const progress = (
  lastSeq: number,
  nodes: PlannedNode[] = [],
  tokens: Record<number, number> = {},
): SessionProgress => ({
  lastSeq,
  nodes,
  turns: Array.from({ length: lastSeq }, (_, i) => ({ seq: i + 1, tokenCount: tokens[i + 1] ?? 10 })),
});

describe('planning: L1 summaries', () => {
  it('waits until 40 turns are uncompacted, then summarises exactly those 40', () => {
    expect(planNext(definePolicy(), progress(39))).toEqual({ kind: 'idle' });
    expect(planNext(definePolicy(), progress(45))).toEqual({
      kind: 'summary',
      tier: 1,
      fromSeq: 1,
      toSeq: 40,
    });
    expect(planNext(definePolicy(), progress(85, [node(1, 1, 40)]))).toEqual({
      kind: 'summary',
      tier: 1,
      fromSeq: 41,
      toSeq: 80,
    });
  });

  it('cuts sooner once the uncompacted turns reach the token budget', () => {
    const policy = definePolicy({ l1TokenBudget: 100 });
    expect(planNext(policy, progress(12, [], { 5: 70 }))).toEqual({
      kind: 'summary',
      tier: 1,
      fromSeq: 1,
      toSeq: 5,
    });
    expect(planNext(policy, progress(12))).toEqual({ kind: 'summary', tier: 1, fromSeq: 1, toSeq: 10 });
    expect(planNext(policy, progress(9))).toEqual({ kind: 'idle' });
  });
});

describe('planning: digests', () => {
  it('digests four L1 nodes into an L2 before cutting the next L1', () => {
    const l1s = [node(1, 1, 40), node(1, 41, 80), node(1, 81, 120), node(1, 121, 160)];
    expect(planNext(definePolicy(), progress(200, l1s))).toEqual({
      kind: 'digest',
      tier: 2,
      fromSeq: 1,
      toSeq: 160,
      children: l1s.map((n) => n.compactionId),
    });
    expect(planNext(definePolicy(), progress(200, [...l1s, node(2, 1, 160)]))).toEqual({
      kind: 'summary',
      tier: 1,
      fromSeq: 161,
      toSeq: 200,
    });
  });

  it('digests sooner, at least two nodes, once the undigested nodes exceed the token budget', () => {
    const policy = definePolicy({ digestTokenBudget: 250 });
    const l1s = [node(1, 1, 40, 100), node(1, 41, 80, 100), node(1, 81, 120, 100)];
    expect(planNext(policy, progress(80, l1s.slice(0, 2)))).toEqual({ kind: 'idle' });
    expect(planNext(policy, progress(120, l1s))).toMatchObject({
      kind: 'digest',
      tier: 2,
      fromSeq: 1,
      toSeq: 120,
    });
    expect(planNext(definePolicy({ digestTokenBudget: 50 }), progress(80, l1s.slice(0, 2)))).toMatchObject({
      kind: 'digest',
      tier: 2,
      toSeq: 80,
    });
  });

  it('builds deeper tiers the same way, up to maxDepth', () => {
    const l2s = [node(2, 1, 160), node(2, 161, 320), node(2, 321, 480), node(2, 481, 640)];
    expect(planNext(definePolicy(), progress(640, l2s))).toMatchObject({
      kind: 'digest',
      tier: 3,
      fromSeq: 1,
      toSeq: 640,
    });
    expect(planNext(definePolicy({ maxDepth: 2 }), progress(640, l2s))).toEqual({ kind: 'idle' });
  });

  it('builds the tree from first attempts, so a repair arriving early or late never changes a digest', () => {
    const l1s = [node(1, 1, 40), node(1, 41, 80)];
    const repair = node(1, 41, 80, 100, 1);
    const policy = definePolicy({ digestFanIn: 2 });
    expect(planNext(policy, progress(80, [...l1s, repair]))).toEqual(planNext(policy, progress(80, l1s)));
    expect(planNext(policy, progress(80, [...l1s, repair]))).toMatchObject({
      children: [l1s[0]!.compactionId, l1s[1]!.compactionId],
    });
  });

  it('takes as prior frame the newest first attempt of the same tier before the span', () => {
    const nodes = [
      node(1, 1, 40),
      node(1, 41, 80),
      node(1, 41, 80, 100, 1),
      node(2, 1, 80),
      node(1, 81, 120),
    ];
    expect(priorNodeOf(nodes, 1, 121)).toBe(nodes[4]);
    expect(priorNodeOf(nodes, 1, 81)).toBe(nodes[1]);
    expect(priorNodeOf(nodes, 1, 1)).toBeNull();
    expect(priorNodeOf(nodes, 2, 81)).toBe(nodes[3]);
    expect(priorNodeOf(nodes, 3, 161)).toBeNull();
  });

  it('deepens the tree under a tighter budget (L3 and beyond)', () => {
    const turns = generateSession(11, { turns: 640 });
    const depth = (digestTokenBudget: number | null) =>
      Math.max(
        ...runReference(turns, { policy: definePolicy({ digestTokenBudget }) }).compactions.map(
          (c) => c.tier,
        ),
      );
    expect(depth(null)).toBe(3);
    expect(depth(2500)).toBeGreaterThan(3);
    expect(depth(1000)).toBeGreaterThanOrEqual(depth(2500));
  });
});

describe('policies', () => {
  it('default to L1 every 40 turns and L2 over four nodes', () => {
    expect(definePolicy()).toEqual({
      l1EveryTurns: 40,
      l1TokenBudget: null,
      digestFanIn: 4,
      digestTokenBudget: null,
      maxDepth: 6,
      narrativeTokenBudget: 400,
      summarizer: 'strict',
    });
  });

  it('refuse out-of-range values and ignore unknown keys, which would change the policy id for nothing', () => {
    expect(() => definePolicy({ l1EveryTurns: 0 })).toThrow(TidemarkCoreError);
    expect(() => definePolicy({ digestFanIn: 1 })).toThrow(/digestFanIn/);
    expect(() => definePolicy({ digestTokenBudget: 1.5 })).toThrow(/digestTokenBudget/);
    expect(policyIdOf(definePolicy({ ...({ extra: 1 } as object) }))).toBe(policyIdOf(definePolicy()));
  });
});
