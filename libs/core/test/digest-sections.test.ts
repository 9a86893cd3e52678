import { describe, expect, it } from 'vitest';
import { boundaryQuery, check, summarizeStrict, type StateChange, type TurnEvent } from '../src/index.js';
import { stateBlock } from '../src/summarize/render.js';
import { artifact, closed, digest, disposed, filler, fold, frameAt, l1, opened, turn } from './helpers.js';

// What a strict node says, section by section, so that a model can carry on from it: the goal and the
// latest instruction in every node, what was done per stretch (tools by name with what they ran on,
// files and how), what failed with why, and the state block by name and detail, never by id alone.

const call = (seq: number, id: string, name: string, detail: string): TurnEvent =>
  turn(seq, 'assistant', `Calling ${name}.`, [{ ...opened(id, 'tool_call', name), detail } as StateChange]);

const session: TurnEvent[] = [
  turn(1, 'user', 'Split full_name into first_name and last_name. Keep the migration reversible. Thanks!', [
    opened('c-rev', 'constraint', 'reversible', 'the migration can be rolled back'),
  ]),
  call(2, 'e1', 'edit_file', '{"new_string":"x","path":"src/db/schema.ts"}'),
  turn(3, 'tool', 'Edited.', [closed('e1', 'ok')]),
  call(4, 'm1', 'run_migration', '--dry-run against staging'),
  turn(5, 'tool', 'Lock timeout.', [
    { type: 'item_closed', itemId: 'm1', outcome: 'error', detail: 'lock timeout during backfill' },
  ]),
  turn(6, 'user', 'No backfill in one go.', [
    disposed('approach:backfill', 'rejected', 'it locks the table'),
  ]),
  call(7, 'e2', 'edit_file', '{"path":"src/db/schema.ts"}'),
  turn(8, 'tool', 'Edited again.', [
    closed('e2', 'ok'),
    artifact('migrations/003_up.sql', 'created', 'sha256:1'),
  ]),
  ...filler(9, 10),
  turn(11, 'user', 'Now update the API to read the new columns.'),
  call(12, 'r1', 'read_file', 'src/api/users.ts'),
  turn(13, 'tool', 'Read.', [closed('r1', 'ok')]),
  turn(14, 'assistant', 'Starting the export.', [opened('p1', 'subprocess', 'export', 'users to csv')]),
  ...filler(15, 20),
];

describe('a strict node', () => {
  const first = l1(session, 1, 10);
  const second = l1(session, 11, 20, { priorFrame: first });
  const top = digest(session, [first, second]);

  it('states the goal whole, cut at a sentence, and the latest instruction; carries both into later nodes', () => {
    const goal =
      'Goal: Split full_name into first_name and last_name. Keep the migration reversible. Thanks!';
    expect(first.narrative.split('\n')).toContain(goal);
    expect(first.narrative).toContain('Latest instruction (#6): No backfill in one go.');
    // No user turn names the goal in 11..20: it comes from the prior frame; the instruction is the span's.
    expect(second.narrative.split('\n')).toContain(goal);
    expect(second.narrative).toContain(
      'Latest instruction (#11): Now update the API to read the new columns.',
    );
    expect(top.narrative.split('\n')).toContain(goal);
    expect(top.narrative).toContain('Latest instruction (#11)');
  });

  it('says what was done per stretch: tools by name, counted, and the files touched and how', () => {
    expect(first.narrative).toContain(
      'Done:\n- turns 1–10: edit_file ×2, run_migration ×1 (1 error); files: created migrations/003_up.sql; edit_file src/db/schema.ts.',
    );
    // The earlier stretch is carried, then the span's own.
    expect(second.narrative).toContain(
      `Done:\n${first.narrative.split('\n').find((l) => l.startsWith('- turns 1–10'))}\n- turns 11–20: read_file ×1.`,
    );
    // A digest says it per child.
    expect(top.narrative).toMatch(/Done:\n- turns 1–10: edit_file ×2.*\n- turns 11–20: read_file ×1\./);
  });

  it('says what failed and why, and carries it into later nodes so it is not retried', () => {
    const line = '- run_migration --dry-run against staging: error at #5 (lock timeout during backfill) [m1]';
    expect(first.narrative).toContain(`Failed (do not retry as it was):\n${line}`);
    expect(second.narrative).toContain(line);
    expect(top.narrative).toContain(line);
  });

  it('never quotes turn heads: no "#seq role:" line, whatever the span', () => {
    for (const node of [first, second, top])
      expect(node.narrative).not.toMatch(/#\d+ (user|assistant|tool):/);
  });

  it('has a state block that names every item by name and detail, with its id for provenance', () => {
    const block = stateBlock(second.claims);
    expect(block).toContain(
      '- export users to csv (subprocess opened at #14; handle pid-p1; log /logs/p1.log) [p1]',
    );
    expect(block).toContain('- reversible: the migration can be rolled back (since #1) [c-rev]');
    expect(block).toContain('- src/api/users.ts: read_file #13');
    expect(stateBlock(first.claims)).toContain(
      '- run_migration --dry-run against staging: error at #5 (lock timeout during backfill) [m1]',
    );
    expect(stateBlock(first.claims)).toContain('- src/db/schema.ts: edit_file #3 #8');
  });

  it('is true of the log: the check passes every node', () => {
    expect(check(first, frameAt(1), fold(session).stateAt(boundaryQuery(first)))).toEqual([]);
    expect(check(second, frameAt(1), fold(session).stateAt(boundaryQuery(second)))).toEqual([]);
  });

  it('folds the oldest stretches into one line when they do not fit the budget, and still fits it', () => {
    const long = [session[0]!, ...filler(2, 400)];
    let prior = null as ReturnType<typeof l1> | null;
    for (let from = 1; from <= 400; from += 10) prior = l1(long, from, from + 9, { priorFrame: prior });
    const small = summarizeStrict({
      span: { kind: 'turns', turns: long.slice(390, 400) },
      state: fold(long).stateAt({ ...query(prior!) }),
      priorFrame: l1(long, 381, 390, { priorFrame: null }),
      budget: 60,
    });
    expect(small.narrative.length).toBeLessThanOrEqual(240);
    expect(prior!.narrative).toMatch(/- turns 1–\d+: left out for the budget; the raw log has it\./);
    expect(prior!.narrative).toContain('- turns 391–400: no tool calls ended.');
    expect(prior!.narrative.length).toBeLessThanOrEqual(400 * 4);
  });
});

function query(node: { tenantId: string; sessionId: string; span: { fromSeq: number; toSeq: number } }) {
  return {
    tenantId: node.tenantId,
    sessionId: node.sessionId,
    fromSeq: node.span.fromSeq,
    toSeq: node.span.toSeq,
    itemIds: [],
    itemKeys: [],
    paths: [],
  };
}
