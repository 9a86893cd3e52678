import type { StateChange, TurnEvent, TurnRole } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { answerProbe, compressionOf, probeQuestions } from '../src/probe.js';
import { rawTurnText } from '@tidemark/core';

// The probe: questions from the raw log's events, answered from a context's text alone.

const turn = (seq: number, role: TurnRole, content: string, changes: StateChange[] = []): TurnEvent => ({
  tenantId: 't',
  sessionId: 's',
  seq,
  turnId: `turn-${seq}`,
  timestamp: seq,
  role,
  content,
  tokenCount: Math.ceil(content.length / 4),
  changes,
  original: null,
});

const session: TurnEvent[] = [
  turn(1, 'system', 'You are a coding agent.'),
  turn(2, 'user', 'Migrate the users table to UUID keys. Keep it reversible.', [
    {
      type: 'item_opened',
      itemId: 'constraint:reversible',
      kind: 'constraint',
      name: 'reversible',
      detail: 'the migration can be rolled back',
      handle: null,
      logPath: null,
    },
  ]),
  turn(3, 'assistant', 'Trying add-column-then-backfill.', [
    {
      type: 'item_disposed',
      itemKey: 'approach:backfill',
      disposition: 'rejected',
      reason: 'dry run locked the table',
      supersededBy: null,
    },
    { type: 'artifact_recorded', path: 'migrations/003_down.sql', action: 'created', digest: null },
    {
      type: 'item_opened',
      itemId: 'proc-1',
      kind: 'subprocess',
      name: 'psql -f up.sql',
      detail: null,
      handle: 'pid:42',
      logPath: '/tmp/psql.log',
    },
  ]),
];

describe('the probe', () => {
  const questions = probeQuestions(session);

  it('asks for the goal, each file and how, what not to retry and why, what is open, the constraints', () => {
    expect(questions.map((q) => [q.class, q.facts])).toEqual([
      ['goal', ['Migrate the users table to UUID keys.']],
      ['files', ['migrations/003_down.sql', 'created']],
      ['not_to_retry', ['approach:backfill', 'rejected', 'dry run locked the table']],
      ['constraints', ['reversible', 'the migration can be rolled back']],
      ['still_open', ['proc-1', 'pid:42']],
    ]);
  });

  it('counts a question answered only when every fact is in the context, case and spacing aside', () => {
    const full = answerProbe(questions, [
      {
        content:
          'Goal: migrate the users table to   UUID keys. Files: migrations/003_down.sql created. ' +
          'Rejected: approach:backfill (dry run locked the table). Open: proc-1 (pid:42). ' +
          'Constraint reversible: the migration can be rolled back.',
      },
    ]);
    expect(full).toMatchObject({ asked: 5, answered: 5, score: 1, missed: [] });
    const partial = answerProbe(questions, [
      { content: 'Open: proc-1. Rejected: approach:backfill. migrations/003_down.sql created' },
    ]);
    expect(partial.answered).toBe(1);
    expect(partial.missed).toEqual([
      'goal: #2',
      'not_to_retry: approach:backfill',
      'constraints: constraint:reversible',
      'still_open: proc-1',
    ]);
    expect(partial.byClass.files).toEqual({ asked: 1, answered: 1 });
  });

  it('asks what a writing tool did to which file, and what failed with why, from the calls in the log', () => {
    const calls = probeQuestions([
      ...session,
      turn(4, 'assistant', 'Editing and migrating.', [
        {
          type: 'item_opened',
          itemId: 'c1',
          kind: 'tool_call',
          name: 'edit_file',
          detail: '{"path":"src/db.ts","old":"a"}',
          handle: null,
          logPath: null,
        },
        {
          type: 'item_opened',
          itemId: 'c2',
          kind: 'tool_call',
          name: 'run_migration',
          detail: '--dry-run',
          handle: null,
          logPath: null,
        },
        {
          type: 'item_opened',
          itemId: 'c3',
          kind: 'tool_call',
          name: 'read_file',
          detail: 'src/x.ts',
          handle: null,
          logPath: null,
        },
      ]),
      turn(5, 'tool', 'Done.', [
        { type: 'item_closed', itemId: 'c1', outcome: 'ok', detail: null },
        { type: 'item_closed', itemId: 'c2', outcome: 'error', detail: 'lock timeout' },
        { type: 'item_closed', itemId: 'c3', outcome: 'ok', detail: null },
      ]),
    ]);
    expect(
      calls.filter((q) => ['c2', 'edit_file src/db.ts'].includes(q.about)).map((q) => [q.class, q.facts]),
    ).toEqual([
      ['files', ['src/db.ts', 'edit_file']],
      ['not_to_retry', ['run_migration', '--dry-run', 'error', 'lock timeout']],
    ]);
  });

  it('measures compression as the digest part over the raw turns it stands for, and none without a node', () => {
    // The raw side is the turns as a raw resume gives them: content and the state line of each.
    const raw = session.reduce((n, t) => n + Math.ceil(rawTurnText(t).length / 4), 0);
    expect(raw).toBeGreaterThan(session.reduce((n, t) => n + Math.ceil(t.content.length / 4), 0));
    const digest = { content: 'x'.repeat(40) };
    expect(compressionOf([digest], session, 4, true)).toBeCloseTo(10 / raw);
    expect(compressionOf([digest], session, 4, false)).toBeNull();
  });
});
