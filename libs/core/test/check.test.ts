import { describe, expect, it } from 'vitest';
import { boundaryQuery, check, TidemarkCoreError, type Compaction, type TurnEvent } from '../src/index.js';
import {
  artifact,
  closed,
  disposed,
  fold,
  frameAt,
  l1,
  opened,
  stateFor,
  turn,
  withClaims,
} from './helpers.js';

// A session with one of everything. Over 1..10: call-a closed ok, call-b closed error, proc-1 open,
// c-compat superseded by c-fast (active), approach:rewrite rejected, approach:cache failed,
// src/api.ts created then modified, docs/old.md created then deleted.
const session: TurnEvent[] = [
  turn(1, 'user', 'Keep the API backwards compatible.', [
    opened('c-compat', 'constraint', 'backwards compatible API', 'The API must stay backwards compatible.'),
  ]),
  turn(2, 'assistant', 'Reading both files in parallel.', [
    opened('call-a', 'tool_call', 'read_file'),
    opened('call-b', 'tool_call', 'read_file'),
  ]),
  turn(3, 'tool', 'contents of a', [closed('call-a', 'ok')]),
  turn(4, 'user', 'No rewrite, please.', [
    disposed('approach:rewrite', 'rejected', 'the user rejected a rewrite'),
  ]),
  turn(5, 'assistant', 'Created the API module.', [artifact('src/api.ts', 'created', 'sha256:1')]),
  turn(6, 'assistant', 'Starting the test watcher.', [opened('proc-1', 'subprocess', 'npm test -- --watch')]),
  turn(7, 'user', 'Actually, speed matters more.', [
    opened('c-fast', 'constraint', 'fast API', 'Latency under 10 ms.'),
    disposed('c-compat', 'superseded', 'the user replaced it', 'c-fast'),
  ]),
  turn(8, 'tool', 'error reading b', [
    closed('call-b', 'error'),
    artifact('src/api.ts', 'modified', 'sha256:2'),
  ]),
  turn(9, 'assistant', 'Drafted notes.', [artifact('docs/old.md', 'created', 'sha256:3')]),
  turn(10, 'assistant', 'Removed the notes; caching failed.', [
    artifact('docs/old.md', 'deleted'),
    disposed('approach:cache', 'failed', 'cache made it slower'),
  ]),
  turn(11, 'assistant', 'Asking for approval.', [
    opened('approval-1', 'approval_request', 'deploy'),
    closed('proc-1', 'ok'),
  ]),
];

const frame = frameAt(1);
const valid = l1(session, 1, 10);
const checked = (candidate: Compaction, options?: { artifacts?: boolean }) =>
  check(candidate, frame, stateFor(session, candidate), options);
const one = (condition: string, ...ids: string[]) => [
  { condition, ids, detail: expect.any(String) as string },
];

describe('check: a strict summary', () => {
  it('passes every condition, with every fact of the span claimed', () => {
    expect(valid.claims).toMatchObject({
      resolved: [
        { itemId: 'call-a', outcome: 'ok', seq: 3 },
        { itemId: 'call-b', outcome: 'error', seq: 8 },
      ],
      unresolved: [
        { itemId: 'c-fast', kind: 'constraint', seq: 7 },
        { itemId: 'proc-1', kind: 'subprocess', seq: 6 },
      ],
      dispositions: [
        { itemKey: 'approach:cache', disposition: 'failed', seq: 10 },
        { itemKey: 'approach:rewrite', disposition: 'rejected', seq: 4 },
        { itemKey: 'c-compat', disposition: 'superseded', supersededBy: 'c-fast', seq: 7 },
      ],
      artifacts: [
        { path: 'docs/old.md', action: 'deleted', digest: null, seq: 10 },
        { path: 'src/api.ts', action: 'modified', digest: 'sha256:2', seq: 8 },
      ],
      constraints: [{ itemId: 'c-fast', name: 'fast API', detail: 'Latency under 10 ms.', seq: 7 }],
    });
    expect(checked(valid)).toEqual([]);
  });
});

describe('check: closure', () => {
  it('fails when an open subprocess is claimed with another handle, or without its handle or log', () => {
    const withProc = (change: object) =>
      withClaims(valid, (c) => ({
        unresolved: c.unresolved.map((u) => (u.itemId === 'proc-1' ? { ...u, ...change } : u)),
      }));
    expect(valid.claims.unresolved.find((u) => u.itemId === 'proc-1')).toMatchObject({
      handle: 'pid-proc-1',
      logPath: '/logs/proc-1.log',
    });
    expect(checked(withProc({ handle: 'pid-9' }))).toEqual(one('closure', 'proc-1'));
    expect(checked(withProc({ handle: 'pid-9' }))[0]!.detail).toContain(
      'claimed handle "pid-9", but the log has "pid-proc-1"',
    );
    expect(checked(withProc({ handle: null }))).toEqual(one('closure', 'proc-1'));
    expect(checked(withProc({ logPath: null }))).toEqual(one('closure', 'proc-1'));
    expect(checked(withProc({ name: 'npm start' }))).toEqual(one('closure', 'proc-1'));
    // A detail may be left out (the log has none here), but one stated must be the log's.
    expect(checked(withProc({ detail: 'in watch mode' }))).toEqual(one('closure', 'proc-1'));
  });

  it('fails when a resolved item is claimed with a name or detail the log does not have; accepts none', () => {
    const withCall = (change: object) =>
      withClaims(valid, (c) => ({
        resolved: c.resolved.map((r) => (r.itemId === 'call-a' ? { ...r, ...change } : r)),
      }));
    expect(valid.claims.resolved.find((r) => r.itemId === 'call-a')).toMatchObject({
      name: 'read_file',
      detail: null,
      outcomeDetail: null,
    });
    expect(checked(withCall({ name: 'write_file' }))).toEqual(one('closure', 'call-a'));
    expect(checked(withCall({ outcomeDetail: 'read 3 lines' }))).toEqual(one('closure', 'call-a'));
    // Nodes written before claims carried names state none, and that claims nothing.
    expect(checked(withCall({ name: null }))).toEqual([]);
  });

  it('fails when an open subprocess is not marked UNRESOLVED', () => {
    const candidate = withClaims(valid, (c) => ({
      unresolved: c.unresolved.filter((u) => u.itemId !== 'proc-1'),
    }));
    expect(checked(candidate)).toEqual(one('closure', 'proc-1'));
    expect(checked(candidate)[0]!.detail).toContain('not marked UNRESOLVED');
  });

  it('fails when an item closed in the span is not claimed resolved', () => {
    expect(
      checked(withClaims(valid, (c) => ({ resolved: c.resolved.filter((r) => r.itemId !== 'call-a') }))),
    ).toEqual(one('closure', 'call-a'));
  });

  it('fails when a resolved item is claimed with another outcome', () => {
    const candidate = withClaims(valid, (c) => ({
      resolved: c.resolved.map((r) => (r.itemId === 'call-b' ? { ...r, outcome: 'ok' as const } : r)),
    }));
    expect(checked(candidate)).toEqual(one('closure', 'call-b'));
  });

  it('fails when an open item is claimed resolved (a synthetic result)', () => {
    const candidate = withClaims(valid, (c) => ({
      resolved: [
        ...c.resolved,
        { itemId: 'proc-1', outcome: 'ok' as const, seq: 10, name: null, detail: null, outcomeDetail: null },
      ],
    }));
    expect(checked(candidate)).toEqual(one('closure', 'proc-1'));
    expect(checked(candidate)[0]!.detail).toContain('still open');
  });

  it('fails when a closed item is claimed UNRESOLVED (a stale "still running")', () => {
    const candidate = withClaims(valid, (c) => ({
      unresolved: [
        ...c.unresolved,
        {
          itemId: 'call-a',
          kind: 'tool_call' as const,
          name: 'read_file',
          seq: 2,
          detail: null,
          handle: null,
          logPath: null,
        },
      ],
    }));
    expect(checked(candidate)).toEqual(one('closure', 'call-a'));
  });

  it('fails when an item the log never opened is claimed', () => {
    const candidate = withClaims(valid, (c) => ({
      resolved: [
        ...c.resolved,
        { itemId: 'ghost', outcome: 'ok' as const, seq: 5, name: null, detail: null, outcomeDetail: null },
      ],
    }));
    expect(checked(candidate)).toEqual(one('closure', 'ghost'));
  });

  it('names every failing id, sorted, in one violation', () => {
    const candidate = withClaims(valid, () => ({ unresolved: [], resolved: [] }));
    expect(checked(candidate)).toEqual(one('closure', 'c-fast', 'call-a', 'call-b', 'proc-1'));
  });

  it('counts an item opened before the span and still open at its boundary', () => {
    const later = l1(session, 8, 10);
    expect(later.claims.unresolved.map((u) => u.itemId)).toEqual(['c-fast', 'proc-1']);
    expect(checked(withClaims(later, () => ({ unresolved: [] })))).toEqual(
      one('closure', 'c-fast', 'proc-1'),
    );
  });
});

describe('check: retention', () => {
  it('fails when a rejected approach is missing from the dispositions', () => {
    const candidate = withClaims(valid, (c) => ({
      dispositions: c.dispositions.filter((d) => d.itemKey !== 'approach:rewrite'),
    }));
    expect(checked(candidate)).toEqual(one('retention', 'approach:rewrite'));
  });

  it('fails when a disposition is claimed with another kind: existence without the disposition does not count', () => {
    const candidate = withClaims(valid, (c) => ({
      dispositions: c.dispositions.map((d) =>
        d.itemKey === 'approach:cache' ? { ...d, disposition: 'rejected' as const } : d,
      ),
    }));
    expect(checked(candidate)).toEqual(one('retention', 'approach:cache'));
  });

  it('fails when a superseded item names another replacement', () => {
    const candidate = withClaims(valid, (c) => ({
      dispositions: c.dispositions.map((d) =>
        d.itemKey === 'c-compat' ? { ...d, supersededBy: 'c-other' } : d,
      ),
    }));
    expect(checked(candidate)).toEqual(one('retention', 'c-compat'));
  });

  it('fails when a disposition the log does not have is claimed', () => {
    const candidate = withClaims(valid, (c) => ({
      dispositions: [
        ...c.dispositions,
        {
          itemKey: 'approach:invented',
          disposition: 'failed' as const,
          reason: 'made up',
          supersededBy: null,
          seq: 5,
        },
      ],
    }));
    expect(checked(candidate)).toEqual(one('retention', 'approach:invented'));
  });

  it('fails when an active constraint is presented as superseded', () => {
    const candidate = withClaims(valid, (c) => ({
      dispositions: [
        ...c.dispositions,
        {
          itemKey: 'c-fast',
          disposition: 'superseded' as const,
          reason: 'no',
          supersededBy: 'c-compat',
          seq: 9,
        },
      ],
    }));
    expect(checked(candidate)).toEqual(one('retention', 'c-fast'));
  });

  it('fails when a superseded constraint is presented as current', () => {
    const candidate = withClaims(valid, (c) => ({
      constraints: [
        ...c.constraints,
        { itemId: 'c-compat', name: 'backwards compatible API', detail: null, seq: 1 },
      ],
    }));
    expect(checked(candidate)).toEqual(one('retention', 'c-compat'));
    expect(checked(candidate)[0]!.detail).toContain('superseded');
  });

  it('fails when an active constraint is missing from the constraints', () => {
    expect(checked(withClaims(valid, () => ({ constraints: [] })))).toEqual(one('retention', 'c-fast'));
  });

  it('accepts a true disposition from before the span (carried forward) and refuses a false one', () => {
    const later = l1(session, 8, 10);
    const rewrite = valid.claims.dispositions.find((d) => d.itemKey === 'approach:rewrite')!;
    expect(checked(withClaims(later, (c) => ({ dispositions: [...c.dispositions, rewrite] })))).toEqual([]);
    expect(
      checked(withClaims(later, (c) => ({ dispositions: [...c.dispositions, { ...rewrite, seq: 3 }] }))),
    ).toEqual(one('retention', 'approach:rewrite'));
  });
});

describe('check: depth', () => {
  it('fails when the marker points below the frame', () => {
    const violations = check(valid, frameAt(2), stateFor(session, valid));
    expect(violations).toEqual(one('depth', valid.compactionId));
    expect(violations[0]!.detail).toContain('marker at L1, frame at L2');
  });

  it('fails when the marker depth is not the node tier', () => {
    const candidate = { ...valid, marker: { ...valid.marker, depth: 2 } };
    expect(check(candidate, frameAt(2), stateFor(session, candidate))).toEqual(
      one('depth', valid.compactionId),
    );
  });
});

describe('check: artifacts', () => {
  it('fails when a standing artifact is missing', () => {
    expect(checked(withClaims(valid, () => ({ artifacts: [] })))).toEqual(one('artifacts', 'src/api.ts'));
  });

  it('fails when an artifact is claimed with a stale digest', () => {
    const candidate = withClaims(valid, () => ({
      artifacts: [{ path: 'src/api.ts', action: 'created' as const, digest: 'sha256:1', seq: 5 }],
    }));
    expect(checked(candidate)).toEqual(one('artifacts', 'src/api.ts'));
  });

  it('fails when a deleted artifact is claimed as standing, and does not require the deletion', () => {
    const standing = withClaims(valid, (c) => ({
      artifacts: [
        ...c.artifacts,
        { path: 'docs/old.md', action: 'created' as const, digest: 'sha256:3', seq: 9 },
      ],
    }));
    expect(checked(standing)).toEqual(one('artifacts', 'docs/old.md'));
    const withoutDeletion = withClaims(valid, (c) => ({
      artifacts: c.artifacts.filter((a) => a.action !== 'deleted'),
    }));
    expect(checked(withoutDeletion)).toEqual([]);
  });

  it('is not checked when switched off', () => {
    const candidate = withClaims(valid, () => ({
      artifacts: [{ path: 'nowhere.txt', action: 'created' as const, digest: null, seq: 2 }],
    }));
    expect(checked(candidate, { artifacts: false })).toEqual([]);
    expect(checked(candidate)).toEqual(one('artifacts', 'nowhere.txt', 'src/api.ts'));
  });
});

describe('check: verifiable', () => {
  it('is unverifiable, and decides nothing else, when the state is not applied up to the boundary', () => {
    const partial = fold(session.slice(0, 7)).stateAt({
      ...stateFor(session, valid),
      itemIds: [],
      itemKeys: [],
      paths: [],
    });
    const lossy = withClaims(valid, () => ({ unresolved: [], dispositions: [] }));
    expect(check(lossy, frame, partial)).toEqual(one('unverifiable', valid.compactionId));
    expect(check(lossy, frame, partial)[0]!.detail).toContain('state applied up to #7, boundary at #10');
  });

  it('is unverifiable when the state stops one turn short of the boundary, and verifiable once it reaches it', () => {
    const query = { ...stateFor(session, valid), itemIds: [], itemKeys: [], paths: [] };
    expect(check(valid, frame, fold(session.slice(0, 9)).stateAt(query))).toEqual(
      one('unverifiable', valid.compactionId),
    );
    expect(
      check(valid, frame, fold(session.slice(0, 10)).stateAt({ ...query, ...boundaryQuery(valid) })),
    ).toEqual([]);
  });

  it('still reports a wrong depth when unverifiable', () => {
    const partial = fold(session.slice(0, 3)).stateAt({
      ...stateFor(session, valid),
      itemIds: [],
      itemKeys: [],
      paths: [],
    });
    expect(check(valid, frameAt(3), partial).map((v) => v.condition)).toEqual(['depth', 'unverifiable']);
  });

  it('refuses a state that answers another span', () => {
    const other = fold(session).stateAt({
      tenantId: valid.tenantId,
      sessionId: valid.sessionId,
      fromSeq: 2,
      toSeq: 10,
      itemIds: [],
      itemKeys: [],
      paths: [],
    });
    expect(() => check(valid, frame, other)).toThrow(TidemarkCoreError);
  });
});

describe('check: conditions combined', () => {
  it('reports every failing condition once, in order, each with all of its ids', () => {
    const lossy = withClaims(valid, (c) => ({
      unresolved: c.unresolved.filter((u) => u.itemId !== 'proc-1'),
      dispositions: c.dispositions.filter((d) => d.disposition !== 'rejected'),
      artifacts: [],
      constraints: [],
    }));
    expect(check(lossy, frameAt(2), stateFor(session, lossy))).toEqual([
      ...one('closure', 'proc-1'),
      ...one('retention', 'approach:rewrite', 'c-fast'),
      ...one('depth', valid.compactionId),
      ...one('artifacts', 'src/api.ts'),
    ]);
  });

  it('does not depend on the order of the claim lists', () => {
    const lossy = withClaims(valid, (c) => ({
      resolved: [
        ...c.resolved,
        { itemId: 'proc-1', outcome: 'ok' as const, seq: 9, name: null, detail: null, outcomeDetail: null },
      ],
      dispositions: c.dispositions.slice(1),
    }));
    const reversed = withClaims(lossy, (c) => ({
      resolved: [...c.resolved].reverse(),
      unresolved: [...c.unresolved].reverse(),
      dispositions: [...c.dispositions].reverse(),
      artifacts: [...c.artifacts].reverse(),
      constraints: [...c.constraints].reverse(),
    }));
    expect(checked(reversed)).toEqual(checked(lossy));
    expect(checked(lossy).map((v) => v.condition)).toEqual(['closure', 'retention']);
  });
});
