import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  boundaryQuery,
  canonicalJson,
  decide,
  definePolicy,
  evolve,
  foldDecisions,
  generateSession,
  initialState,
  resumePlan,
  runReference,
  seededRandom,
  type Compaction,
  type MarkerDecision,
  type ReferenceRun,
  type SessionFrameState,
} from '../src/index.js';

// The session decider's promise: its decisions are a function of the log and the policy alone. A
// validator sees each generation's compactions in the order the compactor published them, but with
// redeliveries (a consumer restarting from an older offset, a compactor republishing after a crash or
// a rebuild, two compactors during a rebalance), cut into batches anywhere, with its state stored and
// loaded between batches, and with the generations of a replay interleaved any way at all. The resume
// worker sees the decisions with redeliveries too. Whatever the delivery, the decisions published are
// the reference's, byte for byte and in the same order per generation, and every fold of them ends in
// the same frame, trust and resume plan.

interface Workload {
  readonly runs: readonly ReferenceRun[];
  readonly seed: number;
}

const workloadArb: fc.Arbitrary<Workload> = fc
  .record({
    seed: fc.integer({ min: 1, max: 1_000_000 }),
    turns: fc.integer({ min: 30, max: 220 }),
    l1EveryTurns: fc.integer({ min: 4, max: 30 }),
    digestFanIn: fc.integer({ min: 2, max: 4 }),
    narrative: fc.boolean(),
    maxRepairs: fc.constantFrom(0, 1),
    replay: fc.boolean(),
  })
  .map(({ seed, turns: count, l1EveryTurns, digestFanIn, narrative, maxRepairs, replay }) => {
    const turns = generateSession(seed, { turns: count, activity: 0.8 });
    const summarizer = narrative ? 'narrative' : 'strict';
    const first = runReference(turns, {
      policy: definePolicy({ l1EveryTurns, digestFanIn, summarizer }),
      maxRepairs,
    });
    if (!replay) return { runs: [first], seed };
    // A replay under another policy: a second generation over the same log.
    const second = runReference(turns, {
      policy: definePolicy({ l1EveryTurns: l1EveryTurns + 3, digestFanIn: 2, summarizer: 'narrative' }),
      generation: 2,
      maxRepairs: 1,
    });
    return { runs: [first, second], seed };
  });

/** A stream as a consumer may see it: in order, but rewound now and then to an earlier position. */
function redelivered<T>(items: readonly T[], random: () => number): T[] {
  const out: T[] = [];
  let rewinds = 0;
  for (let i = 0; i < items.length; i++) {
    out.push(items[i]!);
    if (rewinds < 12 && random() < 0.08) {
      rewinds++;
      i = Math.max(-1, i - 1 - Math.floor(random() * 8));
    }
  }
  return out;
}

/** Several ordered streams merged in a random interleaving (each keeps its own order). */
function interleaved<T>(streams: readonly (readonly T[])[], random: () => number): T[] {
  const positions = streams.map(() => 0);
  const out: T[] = [];
  for (;;) {
    const open = streams.map((s, i) => i).filter((i) => positions[i]! < streams[i]!.length);
    if (open.length === 0) return out;
    const pick = open[Math.floor(random() * open.length)]!;
    out.push(streams[pick]![positions[pick]!++]!);
  }
}

/** The validator: batches of any size, its state stored (as JSON) and loaded between them. */
function validate(
  deliveries: readonly Compaction[],
  runs: readonly ReferenceRun[],
  random: () => number,
): { published: MarkerDecision[]; state: SessionFrameState } {
  const foldOf = new Map(runs.map((run, index) => [index + 1, run.fold]));
  const published: MarkerDecision[] = [];
  let stored = JSON.stringify(initialState);
  for (let start = 0; start < deliveries.length;) {
    const size = 1 + Math.floor(random() * 12);
    let state = JSON.parse(stored) as SessionFrameState;
    for (const node of deliveries.slice(start, start + size)) {
      const boundary = foldOf.get(node.generation)!.stateAt(boundaryQuery(node));
      const made = decide({ node, state: boundary }, state);
      state = made.reduce(evolve, state);
      published.push(...made);
    }
    stored = JSON.stringify(state);
    start += size;
  }
  return { published, state: JSON.parse(stored) as SessionFrameState };
}

const bytes = (decisions: readonly MarkerDecision[]) => decisions.map((d) => canonicalJson(d));

describe('the session decider', () => {
  it('publishes the same decisions and reaches the same frame, trust and plan whatever the delivery', () => {
    fc.assert(
      fc.property(workloadArb, fc.integer(), ({ runs, seed }, shuffle) => {
        const random = seededRandom(seed ^ shuffle);
        const session = runs[0]!.compactions[0] ?? null;
        fc.pre(session !== null);
        const ref = { tenantId: session.tenantId, sessionId: session.sessionId, l0Partition: 0 };

        // Each generation's stream, redelivered; sometimes two compactors publish the same stream.
        const streams = runs.flatMap((run) => {
          const stream = redelivered(run.compactions, random);
          return random() < 0.3 ? [stream, redelivered(run.compactions, random)] : [stream];
        });
        const { published, state } = validate(interleaved(streams, random), runs, random);

        for (const [index, run] of runs.entries()) {
          const generation = index + 1;
          expect(bytes(published.filter((d) => d.generation === generation))).toEqual(bytes(run.decisions));
        }
        const expected = foldDecisions(runs.flatMap((run) => run.decisions));
        expect(state).toEqual(expected);

        // The resume worker folds the markers topic, redelivered, in whatever interleaving it was written.
        const markers = redelivered(published, random);
        const folded = markers.reduce(evolve, initialState);
        expect(folded).toEqual(expected);
        expect(canonicalJson(resumePlan(folded, ref))).toBe(canonicalJson(resumePlan(expected, ref)));
      }),
      { numRuns: 250 },
    );
    // 250 generated workloads: a few seconds alone, more on a machine busy with the integration suite.
  }, 120_000);

  it('decides a strict repair only when the verdict on its node asks for it', () => {
    fc.assert(
      fc.property(workloadArb, ({ runs }) => {
        for (const run of runs) {
          const verdictOn = new Map(
            run.decisions
              .filter((d) => d.type === 'marker_emitted' || d.cause === 'check')
              .map((d) => [d.compactionId, d]),
          );
          for (const node of run.compactions.filter((c) => c.repairOf !== null)) {
            const original = verdictOn.get(node.repairOf!)!;
            const asked =
              original.type === 'marker_invalid' &&
              original.violations.some((v) => v.condition !== 'depth' && v.condition !== 'unverifiable');
            expect(verdictOn.has(node.compactionId)).toBe(asked);
          }
        }
      }),
      { numRuns: 100 },
    );
  }, 60_000);
});
