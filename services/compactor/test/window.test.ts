import {
  canonicalJson,
  definePolicy,
  foldTurns,
  generateSession,
  narrativeSummarizer,
  runReference,
  seededRandom,
  strictSummarizer,
  type Compaction,
  type Policy,
  type TurnEvent,
} from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import {
  admit,
  advance,
  emptyWindow,
  ingest,
  type Compacted,
  type CompactionContext,
  type SessionWindow,
} from '../src/window.js';
import { withRepairs } from '../src/engine.js';

// The window engine against the core reference: fed the same turns in batches of any size, with
// redeliveries and gaps, it must compact exactly what runReference does, byte for byte.

const version = 'compactor-test';

/** The nodes a batch made, stored as the store keeps them (JSON) for the batches after it. */
type NodeStore = Map<string, string>;
function keep(stored: NodeStore, produced: readonly Compacted[]): void {
  for (const c of produced) stored.set(c.node.compactionId, JSON.stringify(c));
}

function contextFor(
  turns: readonly TurnEvent[],
  policy: Policy,
  stored: NodeStore = new Map(),
): CompactionContext {
  const { fold } = foldTurns(turns[0]!.tenantId, turns[0]!.sessionId, turns);
  const bySeq = new Map(turns.map((t) => [t.seq, t]));
  return {
    nodes: (_t, _s, ids) => Promise.resolve(ids.map((id) => JSON.parse(stored.get(id)!) as Compacted)),
    policy,
    generation: 1,
    compactorVersion: version,
    summarizer: policy.summarizer === 'strict' ? strictSummarizer : narrativeSummarizer,
    stateAt: (query) => Promise.resolve({ ok: true, state: fold.stateAt(query) }),
    turns: (_t, _s, seqs) => Promise.resolve(seqs.map((seq) => bySeq.get(seq)!)),
  };
}

/** Feeds turns in random batches (as a consumer would), advancing after each batch. */
async function compactInBatches(
  turns: readonly TurnEvent[],
  policy: Policy,
  seed: number,
): Promise<{ produced: Compacted[]; window: SessionWindow }> {
  const stored: NodeStore = new Map();
  const context = contextFor(turns, policy, stored);
  const random = seededRandom(seed);
  let window = emptyWindow(turns[0]!.tenantId, turns[0]!.sessionId);
  const produced: Compacted[] = [];
  let index = 0;
  while (index < turns.length) {
    const size = 1 + Math.floor(random() * 60);
    const batch = turns
      .slice(index, index + size)
      .map((turn) => ({ turn, partition: 0, offset: turn.seq - 1 }));
    index += size;
    const result = await ingest(window, batch, context);
    expect(result.stopped).toBeNull();
    window = result.window;
    produced.push(...result.produced);
    keep(stored, result.produced);
    // The window names few nodes, whatever the session's length: their bodies are stored beside it.
    expect(JSON.stringify(window).length).toBeLessThan(2_000 + 100 * window.turns.length);
  }
  return { produced, window };
}

/** Byte equality, reported by id (a full diff of 200 turns' nodes drowns the failure). */
function expectSameBytes(actual: readonly Compaction[], expected: readonly Compaction[]): void {
  expect(actual.map((c) => c.compactionId)).toEqual(expected.map((c) => c.compactionId));
  const differing = actual.filter((c, i) => canonicalJson(c) !== canonicalJson(expected[i]));
  expect(differing.map((c) => c.compactionId)).toEqual([]);
}

const reference = (turns: readonly TurnEvent[], policy: Policy, maxRepairs = 0) =>
  runReference(turns, { policy, compactorVersion: version, maxRepairs });

describe('the compaction window', () => {
  const turns = generateSession(21, { turns: 200 });

  it('compacts a 200-turn session under the default policy into contiguous L1s and an L2, as the reference does', async () => {
    const policy = definePolicy();
    const { produced } = await compactInBatches(turns, policy, 1);
    const nodes = produced.map((c) => c.node);
    expect(nodes.filter((n) => n.tier === 1).map((n) => [n.span.fromSeq, n.span.toSeq])).toEqual([
      [1, 40],
      [41, 80],
      [81, 120],
      [121, 160],
      [161, 200],
    ]);
    expect(nodes.filter((n) => n.tier === 2).map((n) => [n.span.fromSeq, n.span.toSeq])).toEqual([[1, 160]]);
    expectSameBytes(nodes, reference(turns, policy).compactions);
  });

  it.each([
    ['narrative', definePolicy({ summarizer: 'narrative' })],
    ['deep', definePolicy({ digestFanIn: 2, digestTokenBudget: 1500, l1EveryTurns: 10 })],
    ['token-triggered', definePolicy({ l1TokenBudget: 700, digestFanIn: 3 })],
  ])('gives the reference bytes under the %s policy whatever the batch sizes', async (_name, policy) => {
    const expected = reference(turns, policy).compactions;
    for (const seed of [2, 3, 4]) {
      const { produced } = await compactInBatches(turns, policy, seed);
      expectSameBytes(
        produced.map((c) => c.node),
        expected,
      );
    }
  });

  it('ignores redeliveries and conflicts, and leaves a gap out, as the fold does', () => {
    let window = emptyWindow('t', 's');
    const seen = [
      turns[0]!,
      turns[1]!,
      turns[0]!,
      { ...turns[1]!, turnId: 'other' },
      turns[3]!,
      turns[2]!,
    ].map((turn) => {
      const next = admit(window, turn, { partition: 0, offset: 0 });
      window = next.window;
      return next.admission;
    });
    expect(seen).toEqual(['accepted', 'accepted', 'duplicate', 'duplicate', 'gap', 'accepted']);
    expect(window.lastSeq).toBe(3);
    expect(admit(window, { ...turns[3]!, turnId: '' }, { partition: 0, offset: 0 }).admission).toBe(
      'invalid',
    );
  });

  it('publishes each lossy node followed by its strict repair, exactly as the reference does', async () => {
    const policy = definePolicy({ summarizer: 'narrative', digestFanIn: 2 });
    const { produced } = await compactInBatches(turns, policy, 5);
    const published = withRepairs(produced, 1);
    expect(published.length).toBe(2 * produced.length);
    published.forEach((node, index) => {
      if (index % 2 === 1)
        expect(node).toMatchObject({
          attempt: 1,
          summarizer: 'strict',
          repairOf: published[index - 1]!.compactionId,
        });
    });
    expectSameBytes(published, reference(turns, policy, 1).compactions);
    // Repairs off: the lossy nodes alone, as the reference without repairs.
    expectSameBytes(withRepairs(produced, 0), reference(turns, policy, 0).compactions);
    // A strict node has no repair: it would restate its own claims.
    const strict = await compactInBatches(turns, definePolicy({ digestFanIn: 2 }), 5);
    expect(withRepairs(strict.produced, 1)).toEqual(strict.produced.map((c) => c.node));
  });

  it('waits without losing work when the state is not there yet', async () => {
    const policy = definePolicy({ l1EveryTurns: 10 });
    const stored: NodeStore = new Map();
    const context = contextFor(turns, policy, stored);
    let window = emptyWindow(turns[0]!.tenantId, turns[0]!.sessionId);
    for (const turn of turns.slice(0, 30))
      window = admit(window, turn, { partition: 0, offset: turn.seq - 1 }).window;
    let calls = 0;
    const flaky: CompactionContext = {
      ...context,
      stateAt: (query) =>
        ++calls === 2 ? Promise.resolve({ ok: false, reason: 'timeout' }) : context.stateAt(query),
    };
    const first = await advance(window, flaky);
    expect(first).toMatchObject({ ok: false, reason: 'timeout' });
    expect(first.produced.map((c) => c.node.span.toSeq)).toEqual([10]);
    keep(stored, first.produced);
    const second = await advance(first.window, context);
    expect([...first.produced, ...(second.ok ? second.produced : [])].map((c) => c.node.span.toSeq)).toEqual([
      10, 20, 30,
    ]);
  });
});
