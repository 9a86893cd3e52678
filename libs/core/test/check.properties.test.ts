import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildCompaction,
  check,
  seededRandom,
  type Claims,
  type Compaction,
  type TurnEvent,
  type Violation,
} from '../src/index.js';
import { sessionWithSpanArb } from './arbitraries.js';
import { frameAt, l1, policy, stateFor, withClaims } from './helpers.js';

// Properties over generated sessions: the check accepts exactly what is complete and true. Each
// property takes a session and a span, summarises the span strictly, then breaks the claims in one way.

const runs = { numRuns: 300 };
const frame = frameAt(1);
const checked = (turns: readonly TurnEvent[], candidate: Compaction): Violation[] =>
  check(candidate, frame, stateFor(turns, candidate));
const exactly = (condition: string, id: string) => [
  { condition, ids: [id], detail: expect.any(String) as string },
];

/** A session, a span, its strict L1 node, and an index to pick a claim with. */
const strictCase = sessionWithSpanArb.chain(({ turns, fromSeq, toSeq }) =>
  fc.record({ turns: fc.constant(turns), candidate: fc.constant(l1(turns, fromSeq, toSeq)), pick: fc.nat() }),
);

function without<T>(list: readonly T[], index: number): T[] {
  return list.filter((_, i) => i !== index);
}

describe('check properties: a strict summary', () => {
  it('of any span of any session passes', () => {
    fc.assert(
      fc.property(sessionWithSpanArb, ({ turns, fromSeq, toSeq }) => {
        expect(checked(turns, l1(turns, fromSeq, toSeq))).toEqual([]);
      }),
      runs,
    );
  });

  it('of any span passes with the prior frame carried forward', () => {
    fc.assert(
      fc.property(sessionWithSpanArb, ({ turns, fromSeq, toSeq }) => {
        fc.pre(fromSeq > 1);
        const priorFrame = l1(turns, 1, fromSeq - 1);
        const candidate = l1(turns, fromSeq, toSeq, { priorFrame });
        expect(checked(turns, candidate)).toEqual([]);
        // What the prior frame said of the time before the span is still there, as the log has it now.
        for (const claim of priorFrame.claims.dispositions) {
          expect(candidate.claims.dispositions.some((d) => d.itemKey === claim.itemKey)).toBe(true);
        }
      }),
      runs,
    );
  });
});

describe('check properties: removing one fact fails exactly the right condition, naming exactly that id', () => {
  it('a disposition: retention', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate, pick }) => {
        const list = candidate.claims.dispositions;
        fc.pre(list.length > 0);
        const index = pick % list.length;
        expect(
          checked(
            turns,
            withClaims(candidate, () => ({ dispositions: without(list, index) })),
          ),
        ).toEqual(exactly('retention', list[index]!.itemKey));
      }),
      runs,
    );
  });

  it('a resolved id: closure', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate, pick }) => {
        const list = candidate.claims.resolved;
        fc.pre(list.length > 0);
        const index = pick % list.length;
        expect(
          checked(
            turns,
            withClaims(candidate, () => ({ resolved: without(list, index) })),
          ),
        ).toEqual(exactly('closure', list[index]!.itemId));
      }),
      runs,
    );
  });

  it('an UNRESOLVED id: closure', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate, pick }) => {
        const list = candidate.claims.unresolved;
        fc.pre(list.length > 0);
        const index = pick % list.length;
        expect(
          checked(
            turns,
            withClaims(candidate, () => ({ unresolved: without(list, index) })),
          ),
        ).toEqual(exactly('closure', list[index]!.itemId));
      }),
      runs,
    );
  });

  it('a standing artifact: artifacts (a deletion is claimed, but not required)', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate, pick }) => {
        const list = candidate.claims.artifacts;
        fc.pre(list.length > 0);
        const index = pick % list.length;
        const removed = list[index]!;
        const expected = removed.action === 'deleted' ? [] : exactly('artifacts', removed.path);
        expect(
          checked(
            turns,
            withClaims(candidate, () => ({ artifacts: without(list, index) })),
          ),
        ).toEqual(expected);
      }),
      runs,
    );
  });

  it('an active constraint: retention', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate, pick }) => {
        const list = candidate.claims.constraints;
        fc.pre(list.length > 0);
        const index = pick % list.length;
        expect(
          checked(
            turns,
            withClaims(candidate, () => ({ constraints: without(list, index) })),
          ),
        ).toEqual(exactly('retention', list[index]!.itemId));
      }),
      runs,
    );
  });
});

describe('check properties: adding a false claim fails, naming it', () => {
  it('an open item claimed resolved: closure', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate, pick }) => {
        const list = candidate.claims.unresolved;
        fc.pre(list.length > 0);
        const item = list[pick % list.length]!;
        const lying = withClaims(candidate, (c) => ({
          resolved: [
            ...c.resolved,
            {
              itemId: item.itemId,
              outcome: 'ok' as const,
              seq: candidate.span.toSeq,
              name: null,
              detail: null,
              outcomeDetail: null,
            },
          ],
        }));
        expect(checked(turns, lying)).toEqual(exactly('closure', item.itemId));
      }),
      runs,
    );
  });

  it('a closed item claimed UNRESOLVED: closure', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate, pick }) => {
        const list = candidate.claims.resolved;
        fc.pre(list.length > 0);
        const item = list[pick % list.length]!;
        const lying = withClaims(candidate, (c) => ({
          unresolved: [
            ...c.unresolved,
            {
              itemId: item.itemId,
              kind: 'tool_call' as const,
              name: 'stale',
              seq: 1,
              detail: null,
              handle: null,
              logPath: null,
            },
          ],
        }));
        expect(checked(turns, lying)).toEqual(exactly('closure', item.itemId));
      }),
      runs,
    );
  });

  it('a disposition the log does not have: retention', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate }) => {
        const lying = withClaims(candidate, (c) => ({
          dispositions: [
            ...c.dispositions,
            {
              itemKey: 'approach:never-tried',
              disposition: 'rejected' as const,
              reason: 'invented',
              supersededBy: null,
              seq: candidate.span.fromSeq,
            },
          ],
        }));
        expect(checked(turns, lying)).toEqual(exactly('retention', 'approach:never-tried'));
      }),
      runs,
    );
  });

  it('an artifact the log does not have: artifacts', () => {
    fc.assert(
      fc.property(strictCase, ({ turns, candidate }) => {
        const lying = withClaims(candidate, (c) => ({
          artifacts: [
            ...c.artifacts,
            {
              path: 'src/invented.ts',
              action: 'created' as const,
              digest: null,
              seq: candidate.span.fromSeq,
            },
          ],
        }));
        expect(checked(turns, lying)).toEqual(exactly('artifacts', 'src/invented.ts'));
      }),
      runs,
    );
  });
});

describe('check properties: the rest', () => {
  it("changing a disposition's kind fails retention, naming its key", () => {
    fc.assert(
      fc.property(
        strictCase,
        fc.constantFrom('rejected' as const, 'failed' as const, 'superseded' as const),
        ({ turns, candidate, pick }, kind) => {
          const list = candidate.claims.dispositions;
          fc.pre(list.length > 0);
          const index = pick % list.length;
          const original = list[index]!;
          fc.pre(original.disposition !== kind);
          const changed = {
            ...original,
            disposition: kind,
            supersededBy: kind === 'superseded' ? (original.supersededBy ?? 'something') : null,
          };
          const dispositions = list.map((d, i) => (i === index ? changed : d));
          expect(
            checked(
              turns,
              withClaims(candidate, () => ({ dispositions })),
            ),
          ).toEqual(exactly('retention', original.itemKey));
        },
      ),
      runs,
    );
  });

  it("a candidate at a depth other than the frame's fails depth alone", () => {
    fc.assert(
      fc.property(strictCase, fc.integer({ min: 2, max: 8 }), ({ turns, candidate }, depth) => {
        expect(check(candidate, frameAt(depth), stateFor(turns, candidate))).toEqual(
          exactly('depth', candidate.compactionId),
        );
      }),
      runs,
    );
  });

  it('permuting the claim lists never changes the result, however broken the claims are', () => {
    fc.assert(
      fc.property(
        strictCase,
        fc.array(fc.boolean(), { maxLength: 40 }),
        fc.integer(),
        ({ turns, candidate }, keep, seed) => {
          let k = 0;
          const drop = <T>(list: readonly T[]): T[] =>
            list.filter(() => keep[k++ % Math.max(1, keep.length)] ?? true);
          const broken = withClaims(candidate, (c) => ({
            resolved: drop(c.resolved),
            unresolved: drop(c.unresolved),
            dispositions: drop(c.dispositions),
            artifacts: drop(c.artifacts),
            constraints: drop(c.constraints),
          }));
          const random = seededRandom(seed);
          const shuffle = <T>(list: readonly T[]): T[] =>
            list
              .map((item) => ({ item, key: random() }))
              .sort((a, b) => a.key - b.key)
              .map(({ item }) => item);
          const permuted: Claims = {
            resolved: shuffle(broken.claims.resolved),
            unresolved: shuffle(broken.claims.unresolved),
            dispositions: shuffle(broken.claims.dispositions),
            artifacts: shuffle(broken.claims.artifacts),
            constraints: shuffle(broken.claims.constraints),
          };
          expect(checked(turns, { ...broken, claims: permuted })).toEqual(checked(turns, broken));
        },
      ),
      runs,
    );
  });

  it('the same inputs always give the same ids, and another span another id', () => {
    fc.assert(
      fc.property(sessionWithSpanArb, ({ turns, fromSeq, toSeq }) => {
        const a = l1(turns, fromSeq, toSeq);
        const b = l1(turns, fromSeq, toSeq);
        expect(b).toEqual(a);
        expect(a.marker.markerId).not.toBe(a.compactionId);
        const other = buildCompaction({
          ...a,
          policy,
          summary: a,
          span: { ...a.span, toSeq: a.span.toSeq + 1 },
        });
        expect(other.compactionId).not.toBe(a.compactionId);
        expect(other.marker.markerId).not.toBe(a.marker.markerId);
      }),
      runs,
    );
  });
});
