import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  turnContentHash,
  foldTurns,
  generateSession,
  SessionFold,
  validateTurn,
  type BoundaryQuery,
  type TurnEvent,
} from '../src/index.js';
import { sessionArb, sessionWithSpanArb } from './arbitraries.js';
import { artifact, closed, disposed, fold, opened, sessionId, tenantId, turn } from './helpers.js';

const query = (
  fromSeq: number,
  toSeq: number,
  lookups: Partial<Pick<BoundaryQuery, 'itemIds' | 'itemKeys' | 'paths'>> = {},
): BoundaryQuery => ({
  tenantId,
  sessionId,
  fromSeq,
  toSeq,
  itemIds: [],
  itemKeys: [],
  paths: [],
  ...lookups,
});

const session: TurnEvent[] = [
  turn(1, 'assistant', 'two calls', [opened('a', 'tool_call'), opened('b', 'tool_call')]),
  turn(2, 'tool', 'a returned', [closed('a')]),
  turn(3, 'user', 'no to plan x', [
    disposed('approach:x', 'rejected', 'too risky'),
    artifact('f.txt', 'created', 'd1'),
  ]),
  turn(4, 'assistant', 'tried x after all', [
    disposed('approach:x', 'failed', 'it broke'),
    artifact('f.txt', 'modified', 'd2'),
  ]),
  turn(5, 'assistant', 'cleanup', [
    closed('b', 'cancelled'),
    artifact('f.txt', 'deleted'),
    opened('c', 'constraint', 'c', 'be quick'),
  ]),
  turn(6, 'user', 'new rule', [
    opened('d', 'constraint', 'd', 'be careful'),
    disposed('c', 'superseded', 'replaced', 'd'),
  ]),
];

describe('fold: the state at a boundary', () => {
  it('gives the items open at B: opened at or before it, not ended at or before it', () => {
    const f = fold(session);
    expect(f.stateAt(query(1, 1)).open.map((i) => i.itemId)).toEqual(['a', 'b']);
    expect(f.stateAt(query(1, 4)).open.map((i) => i.itemId)).toEqual(['b']);
    expect(f.stateAt(query(6, 6)).open.map((i) => i.itemId)).toEqual(['d']);
  });

  it('gives the items closed inside the span with their outcome, and not those closed before it', () => {
    const f = fold(session);
    expect(f.stateAt(query(1, 5)).closed.map((i) => [i.itemId, i.end])).toEqual([
      ['a', { type: 'closed', outcome: 'ok', detail: null, seq: 2 }],
      ['b', { type: 'closed', outcome: 'cancelled', detail: null, seq: 5 }],
    ]);
    expect(f.stateAt(query(3, 5)).closed.map((i) => i.itemId)).toEqual(['b']);
  });

  it('gives the latest disposition of each key inside the span', () => {
    const f = fold(session);
    expect(f.stateAt(query(1, 3)).disposed).toEqual([
      { itemKey: 'approach:x', disposition: 'rejected', reason: 'too risky', supersededBy: null, seq: 3 },
    ]);
    expect(f.stateAt(query(1, 6)).disposed.map((d) => [d.itemKey, d.disposition, d.seq])).toEqual([
      ['approach:x', 'failed', 4],
      ['c', 'superseded', 6],
    ]);
  });

  it('ends an open item when a disposition names it: a superseded constraint is no longer active', () => {
    const state = fold(session).stateAt(query(6, 6, { itemIds: ['c'] }));
    expect(state.open.map((i) => i.itemId)).toEqual(['d']);
    expect(state.lookup.items.get('c')?.end).toEqual({ type: 'disposed', disposition: 'superseded', seq: 6 });
  });

  it('gives each artifact recorded in the span with its latest action at the boundary', () => {
    const f = fold(session);
    expect(f.stateAt(query(3, 4)).artifacts).toEqual([
      { path: 'f.txt', action: 'modified', digest: 'd2', seq: 4 },
    ]);
    expect(f.stateAt(query(3, 3)).artifacts).toEqual([
      { path: 'f.txt', action: 'created', digest: 'd1', seq: 3 },
    ]);
    expect(f.stateAt(query(4, 5)).artifacts).toEqual([
      { path: 'f.txt', action: 'deleted', digest: null, seq: 5 },
    ]);
  });

  it('looks claimed ids up as of the boundary, hiding what came later', () => {
    const state = fold(session).stateAt(
      query(1, 1, { itemIds: ['a', 'c', 'nope'], itemKeys: ['approach:x'], paths: ['f.txt'] }),
    );
    expect(state.lookup.items.get('a')?.end).toBeNull();
    expect(state.lookup.items.has('c')).toBe(false);
    expect(state.lookup.items.has('nope')).toBe(false);
    expect(state.lookup.dispositions.size).toBe(0);
    expect(state.lookup.artifacts.size).toBe(0);
    expect(
      fold(session)
        .stateAt(query(1, 3, { itemKeys: ['approach:x'] }))
        .lookup.dispositions.get('approach:x')?.disposition,
    ).toBe('rejected');
  });
});

describe('fold: sequencing', () => {
  it('refuses a gap and keeps the watermark, so boundaries past it stay unverifiable', () => {
    const f = new SessionFold(tenantId, sessionId);
    expect(f.apply(session[0]!)).toMatchObject({ ok: true, duplicate: false });
    expect(f.apply(session[2]!)).toMatchObject({ ok: false, reason: 'seq_gap' });
    expect(f.appliedSeq).toBe(1);
    expect(f.stateAt(query(1, 3)).appliedSeq).toBe(1);
  });

  it('treats a redelivered turn as a no-op', () => {
    const f = fold(session.slice(0, 3));
    expect(f.apply(session[1]!)).toEqual({ ok: true, seq: 2, duplicate: true, rejected: [] });
    expect(f.stateAt(query(1, 3)).closed.map((i) => i.itemId)).toEqual(['a']);
  });

  it('tells a redelivery by its content: another turn id or timestamp with the same content is a no-op', () => {
    const f = fold(session.slice(0, 3));
    expect(f.apply({ ...session[2]!, turnId: 'resent', timestamp: 99 })).toEqual({
      ok: true,
      seq: 3,
      duplicate: true,
      rejected: [],
    });
  });

  it('refuses a seq already applied with other content, latest or earlier, naming both hashes; the first stays', () => {
    const f = fold(session.slice(0, 3));
    const before = f.stateAt(query(1, 3));
    for (const turn of [session[2]!, session[0]!]) {
      const other = { ...turn, content: `${turn.content} (edited)` };
      expect(f.apply(other)).toEqual({
        ok: false,
        seq: turn.seq,
        reason: 'conflicting_redelivery',
        message: `seq ${turn.seq} was applied with content ${turnContentHash(turn)}; this turn's content is ${turnContentHash(other)} (the first is kept)`,
      });
    }
    expect(f.apply({ ...session[1]!, changes: [] })).toMatchObject({ reason: 'conflicting_redelivery' });
    expect(f.appliedSeq).toBe(3);
    expect(f.stateAt(query(1, 3))).toEqual(before);
  });

  it('refuses a turn of another session', () => {
    expect(fold(session.slice(0, 1)).apply({ ...session[1]!, sessionId: 'elsewhere' })).toMatchObject({
      ok: false,
      reason: 'invalid_event',
    });
  });
});

describe('fold: bad changes are skipped and reported, the rest of the turn applies', () => {
  it('reports a close for an item never opened as unknown_item', () => {
    const f = fold([turn(1, 'assistant', 'x')]);
    expect(f.apply(turn(2, 'tool', 'y', [closed('ghost'), opened('b', 'tool_call')]))).toEqual({
      ok: true,
      seq: 2,
      duplicate: false,
      rejected: [{ index: 0, reason: 'unknown_item', message: 'item ghost was never opened' }],
    });
    expect(f.appliedSeq).toBe(2);
    expect(f.stateAt(query(2, 2)).open.map((i) => i.itemId)).toEqual(['b']);
  });

  it.each([
    ['a close for an item that already ended', [closed('a')], 'item_not_open'],
    ['an item id opened twice', [opened('a', 'tool_call')], 'duplicate_item'],
    ['an empty item id', [opened('', 'tool_call')], 'missing_ids'],
    ['an empty artifact path', [artifact('', 'created')], 'missing_ids'],
    ['superseded without supersededBy', [disposed('k', 'superseded', 'r')], 'invalid_event'],
    ['rejected with a supersededBy', [disposed('k', 'rejected', 'r', 'other')], 'invalid_event'],
  ] as const)('reports %s', (_name, changes, reason) => {
    const f = new SessionFold(tenantId, sessionId);
    f.apply(turn(1, 'assistant', 'x', [opened('a', 'tool_call'), closed('a')]));
    const result = f.apply(turn(2, 'tool', 'y', [...changes]));
    expect(result).toMatchObject({ ok: true, rejected: [{ index: 0, reason }] });
  });
});

describe('validateTurn', () => {
  const good = session[0]!;
  it.each([
    ['an empty tenantId', { tenantId: '' }, 'missing_ids'],
    ['an empty sessionId', { sessionId: '' }, 'missing_ids'],
    ['an empty turnId', { turnId: '' }, 'missing_ids'],
    ['seq 0', { seq: 0 }, 'invalid_event'],
    ['a fractional seq', { seq: 1.5 }, 'invalid_event'],
    ['a negative tokenCount', { tokenCount: -1 }, 'invalid_event'],
    ['an unknown role', { role: 'robot' }, 'invalid_event'],
  ] as const)('refuses %s', (_name, patch, reason) => {
    expect(validateTurn({ ...good, ...patch } as TurnEvent)).toMatchObject({ ok: false, reason });
  });

  it('accepts a well-formed turn', () => {
    expect(validateTurn(good)).toEqual({ ok: true });
  });
});

describe('fold properties', () => {
  it('accepts every generated session without a single rejection', () => {
    fc.assert(
      fc.property(sessionArb, (turns) => {
        const { results } = foldTurns(turns[0]!.tenantId, turns[0]!.sessionId, turns);
        expect(results.every((r) => r.ok && !r.duplicate && r.rejected.length === 0)).toBe(true);
      }),
    );
    for (const seed of [1, 2, 3]) {
      const turns = generateSession(seed, { turns: 300 });
      expect(
        foldTurns(turns[0]!.tenantId, turns[0]!.sessionId, turns).results.every(
          (r) => r.ok && !r.duplicate && r.rejected.length === 0,
        ),
      ).toBe(true);
    }
  });

  it('answers a boundary the same whether or not later turns were applied (past boundaries stay answerable)', () => {
    fc.assert(
      fc.property(sessionWithSpanArb, ({ turns, fromSeq, toSeq }) => {
        const all = turns.flatMap((t) => t.changes.flatMap((c) => ('itemId' in c ? [c.itemId] : [])));
        const keys = turns.flatMap((t) =>
          t.changes.flatMap((c) => (c.type === 'item_disposed' ? [c.itemKey] : [])),
        );
        const paths = turns.flatMap((t) =>
          t.changes.flatMap((c) => (c.type === 'artifact_recorded' ? [c.path] : [])),
        );
        const q = {
          tenantId: turns[0]!.tenantId,
          sessionId: turns[0]!.sessionId,
          fromSeq,
          toSeq,
          itemIds: all,
          itemKeys: keys,
          paths,
        };
        const full = fold(turns).stateAt(q);
        const upTo = fold(turns.slice(0, toSeq)).stateAt(q);
        expect({ ...full, appliedSeq: 0 }).toEqual({ ...upTo, appliedSeq: 0 });
        expect(full.open.some((o) => full.closed.some((c) => c.itemId === o.itemId))).toBe(false);
      }),
    );
  });

  it('gives the same state whatever the order of redeliveries', () => {
    fc.assert(
      fc.property(sessionArb, fc.array(fc.nat()), (turns, redeliveries) => {
        const f = new SessionFold(turns[0]!.tenantId, turns[0]!.sessionId);
        turns.forEach((t, index) => {
          f.apply(t);
          const again = turns[(redeliveries[index] ?? 0) % (index + 1)]!;
          expect(f.apply(again)).toMatchObject({ ok: true, duplicate: true });
        });
        const q = {
          tenantId: turns[0]!.tenantId,
          sessionId: turns[0]!.sessionId,
          fromSeq: 1,
          toSeq: turns.length,
          itemIds: [],
          itemKeys: [],
          paths: [],
        };
        expect(f.stateAt(q)).toEqual(fold(turns).stateAt(q));
      }),
    );
  });
});
