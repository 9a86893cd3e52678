import type { Compaction, MarkerDecision, RegressionDetected, TurnEvent } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import type { SessionStatus } from '../src/outcomes.js';
import type { L0Span } from '@tidemark/contract';
import { createSessionViewReader } from '../src/session-view-reader.js';
import { assembleSessionView, turnRowOf } from '../src/session-view.js';

const ref = { tenantId: 't', sessionId: 's' };

function turn(seq: number, role: TurnEvent['role'], changes: TurnEvent['changes'] = []): TurnEvent {
  return {
    ...ref,
    seq,
    turnId: `turn-${seq}`,
    timestamp: 0,
    role,
    content: `turn ${seq}`,
    tokenCount: 1,
    changes,
    original: null,
  };
}

function node(id: string, tier: number, fromSeq: number, toSeq: number): Compaction {
  const empty = { resolved: [], unresolved: [], dispositions: [], artifacts: [], constraints: [] };
  return {
    ...ref,
    compactionId: id,
    tier,
    generation: 1,
    policyId: 'p',
    policy: '{}',
    span: { fromSeq, toSeq, l0Partition: 0, fromOffset: fromSeq, toOffset: toSeq },
    children: [],
    narrative: '',
    claims: empty,
    tokenCount: 1,
    compactorVersion: '1',
    summarizer: 'narrative',
    marker: {
      markerId: `m-${id}`,
      nodeId: id,
      depth: tier,
      generation: 1,
      l0Partition: 0,
      l0Offset: toSeq,
      toSeq,
    },
    repairOf: null,
    attempt: 0,
  };
}

const status = { ...ref, plan: null, appliedSeq: 6 } as unknown as SessionStatus;

const turns = [
  turn(1, 'user', [
    {
      type: 'item_opened',
      itemId: 'approach:a',
      kind: 'constraint',
      name: 'a',
      detail: null,
      handle: null,
      logPath: null,
    },
  ]),
  turn(2, 'assistant', [
    {
      type: 'item_opened',
      itemId: 'call:x',
      kind: 'tool_call',
      name: 'read_file',
      detail: 'x.ts',
      handle: null,
      logPath: null,
    },
  ]),
  turn(3, 'tool', [{ type: 'item_closed', itemId: 'call:x', outcome: 'ok', detail: null }]),
  turn(4, 'user', [
    {
      type: 'item_disposed',
      itemKey: 'approach:a',
      disposition: 'rejected',
      reason: 'no',
      supersededBy: null,
    },
  ]),
  turn(5, 'assistant', [{ type: 'artifact_recorded', path: 'f.sql', action: 'created', digest: null }]),
  turn(6, 'assistant', [{ type: 'artifact_recorded', path: 'f.sql', action: 'modified', digest: null }]),
];

const invalid = (compactionId: string, cause: string, violations: { condition: string; ids: string[] }[]) =>
  ({
    type: 'marker_invalid',
    markerId: `m-${compactionId}`,
    compactionId,
    ...ref,
    depth: 1,
    generation: 1,
    toSeq: 6,
    l0Partition: 0,
    l0Offset: 6,
    compactorVersion: '1',
    cause,
    violations: violations.map((v) => ({ ...v, detail: `${v.condition} failed` })),
    fallback: { markerId: null, compactionId: null, toSeq: 0, l0Partition: 0, l0Offset: null },
  }) as unknown as MarkerDecision;

describe('the session view', () => {
  it('labels a turn by its role and the tools it opened, and lists its changes by id', () => {
    const row = turnRowOf(turns[1]!);
    expect(row.label).toBe('assistant · read_file');
    expect(row.changes).toEqual([
      { type: 'item_opened', id: 'call:x', text: 'opened tool_call read_file: x.ts' },
    ]);
  });

  it('links each failing id to the turn its condition is about, and a node id to no turn', () => {
    const view = assembleSessionView({
      status,
      compactions: [node('n1', 1, 1, 6)],
      decisions: [
        {
          offset: 7,
          decision: invalid('n1', 'check', [
            { condition: 'closure', ids: ['call:x'] },
            { condition: 'retention', ids: ['approach:a'] },
            { condition: 'artifacts', ids: ['f.sql'] },
            { condition: 'depth', ids: ['n1'] },
          ]),
        },
      ],
      turns: turns.map(turnRowOf),
    });
    const [decision] = view.decisions;
    expect(decision).toMatchObject({ offset: 7, decision: 'invalid', cause: 'check', fromSeq: 1, toSeq: 6 });
    expect(decision!.violations.map((v) => [v.condition, v.ids])).toEqual([
      ['closure', [{ id: 'call:x', seq: 2, seqs: [2, 3] }]],
      ['retention', [{ id: 'approach:a', seq: 4, seqs: [1, 4] }]],
      ['artifacts', [{ id: 'f.sql', seq: 6, seqs: [5, 6] }]],
      ['depth', [{ id: 'n1', seq: null, seqs: [] }]],
    ]);
    expect(view.turns).toMatchObject({ fromSeq: 1, toSeq: 6, total: 6 });
  });

  it('lists nodes highest tier first, and revocations whatever cause string a validator names', () => {
    const view = assembleSessionView({
      status,
      compactions: [node('a', 1, 1, 3), node('b', 1, 4, 6), node('c', 2, 1, 6)],
      decisions: [
        { offset: 1, decision: invalid('a', 'depth_change', [{ condition: 'depth', ids: ['a'] }]) },
        { offset: 2, decision: invalid('c', 'revoked', [{ condition: 'revoked', ids: ['m-c'] }]) },
      ],
      turns: [],
    });
    expect(view.nodes.map((n) => n.nodeId)).toEqual(['c', 'a', 'b']);
    expect(view.revocations.map((d) => d.offset)).toEqual([2]);
    expect(view.regressions).toEqual([]);
    expect(view.turns).toMatchObject({ fromSeq: 0, toSeq: 0, rows: [] });
  });

  it('lists each regression once, linked to the turn that started the step again', () => {
    const regression: RegressionDetected = {
      regressionId: 'r1',
      ...ref,
      seq: 12,
      itemId: 'call:12',
      name: 'run_migration',
      detail: '--dry-run against staging',
      priorSeq: 3,
      priorItemId: 'call:dry-run',
      ruledOut: 'failed',
      nodeId: 'c',
      boundarySeq: 6,
      resumedAtSeq: 10,
    };
    const view = assembleSessionView({
      status,
      compactions: [],
      decisions: [],
      turns: [],
      regressions: [regression, regression],
    });
    expect(view.regressions).toEqual([
      {
        what: 'turn 12: run_migration --dry-run against staging again',
        detail: "failed at turn 3 (call:dry-run), before the resume's boundary at turn 6",
        seq: 12,
        priorSeq: 3,
      },
    ]);
  });

  it('reads its turns from the first wanted to the last applied, both where the projection placed them', async () => {
    // Over in-memory stand-ins for the status, the topics and the projection (the real ones are the
    // e2e session page's): what matters here is the span asked of turns.l0.
    const spans: L0Span[] = [];
    const reader = createSessionViewReader({
      status: () => Promise.resolve({ ok: true, status }),
      history: { read: () => Promise.resolve({ partition: 0, records: [], end: 0 }) },
      log: { l0Position: (_t, _s, seq) => Promise.resolve({ partition: 0, offset: 100 + 3 * seq }) },
      turns: {
        read: (span) => {
          spans.push(span);
          return Promise.resolve(turns.filter((t) => t.seq >= span.fromSeq && t.seq <= span.toSeq));
        },
      },
      turnsTopic: 'turns.l0',
    });
    const outcome = await reader.view(ref.tenantId, ref.sessionId);
    expect(outcome.ok).toBe(true);
    // Not to the partition's end: the traffic after the session's last turn is not fetched.
    expect(spans).toMatchObject([{ fromSeq: 1, toSeq: 6, fromOffset: 103, toOffset: 118 }]);
  });
});
