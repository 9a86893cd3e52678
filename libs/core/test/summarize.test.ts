import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  check,
  estimateTokens,
  mergeClaims,
  narrativeSummarizer,
  strictSummarizer,
  summarizeNarrative,
  summarizeStrict,
  summaryOf,
  summaryQuery,
  TidemarkCoreError,
  type SummaryInput,
  type TurnEvent,
} from '../src/index.js';
import { clip, stateBlock } from '../src/summarize/render.js';
import { sessionArb, sessionWithSpanArb } from './arbitraries.js';
import {
  artifact,
  closed,
  digest,
  disposed,
  filler,
  fold,
  frameAt,
  l1,
  opened,
  stateFor,
  turn,
} from './helpers.js';

const session: TurnEvent[] = [
  turn(1, 'user', 'Make the export reversible.', [
    opened('c-rev', 'constraint', 'reversible export', 'the export be reversible'),
  ]),
  turn(2, 'assistant', 'Trying a streaming export.', [
    opened('call-1', 'tool_call', 'run_export'),
    opened('fh-1', 'file_handle', 'out.csv'),
  ]),
  turn(3, 'tool', 'the streaming export failed', [
    closed('call-1', 'error'),
    disposed('approach:streaming', 'failed', 'it ran out of memory'),
  ]),
  turn(4, 'user', 'Do not batch it either.', [
    disposed('approach:batch', 'rejected', 'the user rejected batching'),
  ]),
  turn(5, 'assistant', 'Wrote the undo script.', [artifact('scripts/undo.sh', 'created', 'sha256:u1')]),
  ...filler(6, 8),
];

const inputFor = (fromSeq: number, toSeq: number, budget = 400): SummaryInput => ({
  span: { kind: 'turns', turns: session.filter((t) => t.seq >= fromSeq && t.seq <= toSeq) },
  state: fold(session).stateAt(
    summaryQuery({
      tenantId: session[0]!.tenantId,
      sessionId: session[0]!.sessionId,
      fromSeq,
      toSeq,
      priorFrame: null,
    }),
  ),
  priorFrame: null,
  budget,
});

describe('the strict summarizer', () => {
  it('claims every state fact of the span and writes a narrative that fits the budget', () => {
    const summary = summarizeStrict(inputFor(1, 8, 30));
    expect(estimateTokens(summary.narrative)).toBeLessThanOrEqual(30);
    expect(summary.claims.dispositions.map((d) => d.itemKey)).toEqual([
      'approach:batch',
      'approach:streaming',
    ]);
    expect(summary.claims.artifacts.map((a) => a.path)).toEqual(['scripts/undo.sh']);
    expect(summary.claims.unresolved.map((u) => u.itemId)).toEqual(['c-rev', 'fh-1']);
    expect(summary.tokenCount).toBeGreaterThan(estimateTokens(summary.narrative));
  });

  it('is deterministic and behind the one summarizer interface', async () => {
    expect(await strictSummarizer.summarize(inputFor(1, 8))).toEqual(summarizeStrict(inputFor(1, 8)));
    expect(strictSummarizer.name).toBe('strict');
  });

  it('fits the budget for any span and any budget', () => {
    fc.assert(
      fc.property(
        sessionWithSpanArb,
        fc.integer({ min: 1, max: 200 }),
        ({ turns, fromSeq, toSeq }, budget) => {
          const first = turns[0]!;
          const state = fold(turns).stateAt(
            summaryQuery({
              tenantId: first.tenantId,
              sessionId: first.sessionId,
              fromSeq,
              toSeq,
              priorFrame: null,
            }),
          );
          const spanTurns = turns.filter((t) => t.seq >= fromSeq && t.seq <= toSeq);
          expect(
            estimateTokens(
              summarizeStrict({ span: { kind: 'turns', turns: spanTurns }, state, priorFrame: null, budget })
                .narrative,
            ),
          ).toBeLessThanOrEqual(budget);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('refuses turns that are not contiguous or a state for another span', () => {
    const input = inputFor(1, 4);
    expect(() =>
      summarizeStrict({ ...input, span: { kind: 'turns', turns: [session[0]!, session[2]!] } }),
    ).toThrow(TidemarkCoreError);
    expect(() => summarizeStrict({ ...input, state: inputFor(1, 5).state })).toThrow(TidemarkCoreError);
  });

  it('carries a prior disposition forward as the log has it now, even when it changed between the frame and the span', () => {
    const turns = [
      ...session.slice(0, 5),
      turn(6, 'assistant', 'Streaming again, rejected again.', [
        disposed('approach:streaming', 'rejected', 'the user said no twice'),
      ]),
      ...filler(7, 10),
    ];
    const prior = l1(turns, 1, 5);
    const next = l1(turns, 8, 10, { priorFrame: prior });
    expect(next.claims.dispositions.find((d) => d.itemKey === 'approach:streaming')).toMatchObject({
      disposition: 'rejected',
      seq: 6,
    });
    expect(check(next, frameAt(1), stateFor(turns, next))).toEqual([]);
  });

  it('carries the prior frame forward as the log has it now, so a node stands alone at resume', () => {
    const turns = [
      ...session,
      turn(9, 'assistant', 'Reworked the undo script.', [
        artifact('scripts/undo.sh', 'modified', 'sha256:u2'),
      ]),
      ...filler(10, 12),
    ];
    const prior = l1(turns, 1, 5);
    const next = l1(turns, 6, 12, { priorFrame: prior });
    expect(next.claims.dispositions.map((d) => [d.itemKey, d.seq])).toEqual([
      ['approach:batch', 4],
      ['approach:streaming', 3],
    ]);
    expect(next.claims.artifacts).toEqual([
      { path: 'scripts/undo.sh', action: 'modified', digest: 'sha256:u2', seq: 9 },
    ]);
    // What was done before the span is carried as the prior frame's own line for it.
    const before = prior.narrative.split('\n').find((line) => line.startsWith('- turns 1–5: '))!;
    expect(before).toBeDefined();
    expect(next.narrative).toContain(`Done:\n${before}\n- turns 6–12: `);
    expect(check(next, frameAt(1), stateFor(turns, next))).toEqual([]);
  });

  it('states the session goal in every node, carried from the prior frame, and how to reach what still runs', () => {
    const turns = [
      ...session,
      turn(9, 'assistant', 'Started the long export in the background.', [
        opened('proc-7', 'subprocess', 'export --all'),
      ]),
      ...filler(10, 12),
    ];
    const first = l1(turns, 1, 5);
    expect(first.narrative.split('\n')[1]).toBe('Goal: Make the export reversible.');
    // No user turn in 6..12: the goal comes from the prior frame, once.
    const next = l1(turns, 6, 12, { priorFrame: first });
    expect(next.narrative.split('\n').filter((line) => line.startsWith('Goal: '))).toEqual([
      'Goal: Make the export reversible.',
    ]);
    // What still runs is claimed with how to reach it, and the state block says it by name.
    expect(next.claims.unresolved.find((u) => u.itemId === 'proc-7')).toMatchObject({
      name: 'export --all',
      handle: 'pid-proc-7',
      logPath: '/logs/proc-7.log',
    });
    expect(stateBlock(next.claims)).toContain(
      '- export --all (subprocess opened at #9; handle pid-proc-7; log /logs/proc-7.log) [proc-7]',
    );
    expect(check(next, frameAt(1), stateFor(turns, next))).toEqual([]);
  });
});

describe('the narrative summarizer', () => {
  it('folds rejections and failures into "explored approaches", drops artifact paths and what is still in flight', () => {
    const summary = summarizeNarrative(inputFor(1, 8));
    expect(summary.narrative).toBe(
      // The goal it names (every summarizer does), then prose that folds what went wrong.
      'Goal: Make the export reversible.\n' +
        'Turns 1–8. User requested the export be reversible; agent explored approaches. 1 step(s) completed.',
    );
    expect(summary.claims.dispositions).toEqual([]);
    expect(summary.claims.artifacts).toEqual([]);
    expect(summary.claims.unresolved.map((u) => u.itemId)).toEqual(['c-rev']);
  });

  it('is caught by the check: every loss is a violation naming what was lost', async () => {
    const candidate = l1(session, 1, 8, { summarize: summarizeNarrative });
    expect(await narrativeSummarizer.summarize(inputFor(1, 8))).toEqual(summarizeNarrative(inputFor(1, 8)));
    expect(check(candidate, frameAt(1), stateFor(session, candidate))).toEqual([
      {
        condition: 'closure',
        ids: ['fh-1'],
        detail: expect.stringContaining('not marked UNRESOLVED') as string,
      },
      {
        condition: 'retention',
        ids: ['approach:batch', 'approach:streaming'],
        detail: expect.any(String) as string,
      },
      { condition: 'artifacts', ids: ['scripts/undo.sh'], detail: expect.any(String) as string },
    ]);
  });
});

describe('digests', () => {
  const turns = [
    ...session,
    ...filler(9, 12),
    turn(13, 'assistant', 'Removed the undo script.', [
      artifact('scripts/undo.sh', 'deleted'),
      closed('fh-1'),
    ]),
    ...filler(14, 16),
  ];
  const children = [l1(turns, 1, 4), l1(turns, 5, 8), l1(turns, 9, 12), l1(turns, 13, 16)];

  it('merge their children: closures and dispositions across the span, open items at its boundary', () => {
    const merged = mergeClaims(children);
    expect(merged.resolved.map((r) => r.itemId)).toEqual(['call-1', 'fh-1']);
    expect(merged.dispositions.map((d) => d.itemKey)).toEqual(['approach:batch', 'approach:streaming']);
    expect(merged.unresolved.map((u) => u.itemId)).toEqual(['c-rev']);
    // The last child's deletion overrules the second child's creation.
    expect(merged.artifacts).toEqual([{ path: 'scripts/undo.sh', action: 'deleted', digest: null, seq: 13 }]);
  });

  it('merged claims of strict children of any session pass at the digest depth', () => {
    fc.assert(
      fc.property(sessionArb, fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), (session, cuts) => {
        const n = session.length;
        const bounds = [...new Set([0, ...cuts.map((c) => c % n), n])].sort((a, b) => a - b);
        const kids = bounds.slice(1).map((to, i) => l1(session, bounds[i]! + 1, to));
        const l2 = digest(session, kids, {
          summarize: (input) =>
            summaryOf('merged', mergeClaims(input.span.kind === 'nodes' ? input.span.nodes : [])),
        });
        expect(check(l2, frameAt(2), stateFor(session, l2))).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('a strict digest of the children passes at the digest depth', () => {
    const l2 = digest(turns, children);
    expect(l2.tier).toBe(2);
    expect(l2.children).toEqual(children.map((c) => c.compactionId));
    expect(l2.narrative).toMatch(/^L2 digest of turns 1–16 \(4 L1 nodes\)\./);
    expect(check(l2, frameAt(2), stateFor(turns, l2))).toEqual([]);
  });

  it('a narrative digest loses the dispositions of the whole span, and the check names them', () => {
    const l2 = digest(turns, children, { summarize: summarizeNarrative });
    expect(check(l2, frameAt(2), stateFor(turns, l2))).toEqual([
      {
        condition: 'retention',
        ids: ['approach:batch', 'approach:streaming'],
        detail: expect.any(String) as string,
      },
    ]);
  });

  it('refuses children of mixed tiers or with a gap', () => {
    const first = turns[0]!;
    const state = fold(turns).stateAt(
      summaryQuery({
        tenantId: first.tenantId,
        sessionId: first.sessionId,
        fromSeq: 1,
        toSeq: 16,
        priorFrame: null,
      }),
    );
    const gap = {
      span: { kind: 'nodes' as const, nodes: [children[0]!, children[2]!] },
      state,
      priorFrame: null,
      budget: 100,
    };
    expect(() => summarizeStrict(gap)).toThrow(/does not follow/);
  });
});

describe('clip', () => {
  // The definition, the plain way: collapse all of the text, then cut. clip reads only a prefix of a
  // long text; it must give the same line for any text, whitespace runs and ends included.
  const plain = (text: string, max: number): string => {
    const flat = text.replace(/\s+/g, ' ').trim();
    if (flat.length <= max) return flat;
    const fits = flat.slice(0, Math.max(1, max - 1));
    const space = fits.lastIndexOf(' ');
    return `${(space > max / 2 ? fits.slice(0, space) : fits).trimEnd()}…`;
  };
  const texts = fc
    .array(
      fc.oneof(fc.constantFrom(' ', '  ', '\n', '\t \n', 'word', 'a', 'é'), fc.string({ maxLength: 6 })),
      {
        maxLength: 120,
      },
    )
    .map((parts) => parts.join(''));

  it('cuts a long text as it would cut the whole of it collapsed', () => {
    fc.assert(
      fc.property(texts, fc.integer({ min: 1, max: 60 }), (text, max) => {
        expect(clip(text, max)).toBe(plain(text, max));
      }),
      { numRuns: 2_000 },
    );
  });

  it('keeps a text whose whitespace tail would have pushed it past the prefix whole', () => {
    const text = `${'x'.repeat(10)}${' '.repeat(100)}`;
    expect(clip(text, 10)).toBe('x'.repeat(10));
  });
});
