import { describe, expect, it } from 'vitest';
import {
  buildResumeContext,
  check,
  definePolicy,
  foldDecisions,
  frameOf,
  resumePlan,
  runReference,
  summarizeNarrative,
  trustedMarkers,
  type TurnEvent,
} from '../src/index.js';
import { artifact, closed, digest, disposed, filler, l1, opened, stateFor, turn } from './helpers.js';

// The two failures the specification observed, as tests by name.

// A long-running migration agent. The user asks for a reversible migration; the add-column-then-backfill
// approach fails its dry run and the user rejects it; a rollback script is written at
// migrations/003_down.sql. Compaction fires every 40 turns.
const migration: TurnEvent[] = [
  turn(1, 'user', 'Migrate the users table. The schema migration must be reversible.', [
    opened(
      'constraint:reversible',
      'constraint',
      'reversible migration',
      'the schema migration be reversible',
    ),
  ]),
  ...filler(2, 9),
  turn(10, 'assistant', 'Plan: add the column, then backfill. Running a dry run.', [
    opened('call:dry-run', 'tool_call', 'run_migration', '--dry-run'),
  ]),
  turn(11, 'tool', 'Dry run failed: the backfill holds a table lock past the timeout.', [
    closed('call:dry-run', 'error'),
  ]),
  turn(12, 'user', 'No. Do not add the column and then backfill; find another way.', [
    disposed('approach:add-column-backfill', 'rejected', 'failed dry run (table lock); the user rejected it'),
  ]),
  ...filler(13, 29),
  turn(30, 'assistant', 'Wrote the rollback script.', [
    artifact('migrations/003_down.sql', 'created', 'sha256:9f2c'),
  ]),
  ...filler(31, 80),
];

describe('the observed failure: a digest that folded a rejection and dropped an artifact', () => {
  const [first, second] = [l1(migration, 1, 40), l1(migration, 41, 80)];
  const lossy = digest(migration, [first, second], { summarize: summarizeNarrative });
  const frame = { nodeId: lossy.compactionId, depth: 2, generation: 1 };

  it('writes a digest in which every sentence is true', () => {
    expect(lossy.narrative).toBe(
      'Goal: Migrate the users table. The schema migration must be reversible.\n' +
        'Turns 1–80. User requested the schema migration be reversible; agent explored approaches. 1 step(s) completed.',
    );
  });

  it('marks the marker invalid for retention (the rejected approach) and artifacts (migrations/003_down.sql), and nothing else', () => {
    expect(check(lossy, frame, stateFor(migration, lossy))).toEqual([
      {
        condition: 'retention',
        ids: ['approach:add-column-backfill'],
        detail: expect.stringContaining('rejected at #12, missing from dispositions') as string,
      },
      {
        condition: 'artifacts',
        ids: ['migrations/003_down.sql'],
        detail: expect.stringContaining('created at #30, missing from artifacts') as string,
      },
    ]);
  });

  it('never resumes from it: the pipeline repairs the span in strict mode, and the resume carries the rejection and the script', () => {
    const run = runReference(migration, {
      policy: definePolicy({ digestFanIn: 2, summarizer: 'narrative' }),
    });
    const invalid = run.decisions.filter(
      (d) => d.type === 'marker_invalid' && d.cause === 'check' && d.depth === 2,
    );
    expect(
      invalid.map((d) => d.type === 'marker_invalid' && d.violations.map((v) => [v.condition, v.ids])),
    ).toEqual([
      [
        ['retention', ['approach:add-column-backfill']],
        ['artifacts', ['migrations/003_down.sql']],
      ],
    ]);
    const plan = resumePlan(run.state, {
      tenantId: migration[0]!.tenantId,
      sessionId: migration[0]!.sessionId,
      l0Partition: 0,
    });
    expect(plan.mode).toBe('digest');
    const node = run.compactions.find(
      (c) => plan.mode === 'digest' && c.compactionId === plan.marker.compactionId,
    )!;
    expect(node).toMatchObject({
      tier: 2,
      summarizer: 'strict',
      attempt: 1,
      repairOf: invalid[0]!.compactionId,
    });
    const context = buildResumeContext({ plan, node, turns: [] });
    expect(context.messages[0]!.content).toContain('approach:add-column-backfill: rejected at #12');
    expect(context.messages[0]!.content).toContain('migrations/003_down.sql: created at #30');
  });
});

describe('the observed failure: an L1 marker whose L2 parent was re-compacted under a tighter budget', () => {
  const session = [...migration, ...filler(81, 320)];
  const loose = runReference(session, { policy: definePolicy({ digestFanIn: 8 }), generation: 1 });
  const tight = runReference(session, {
    policy: definePolicy({ digestFanIn: 8, digestTokenBudget: 300, maxDepth: 3 }),
    generation: 2,
  });
  const l1Node = loose.compactions.find((c) => c.tier === 1 && c.span.toSeq === 280)!;

  it('re-compaction under the tighter budget moves the frame from L2 to L3', () => {
    expect(loose.frame?.depth).toBe(2);
    expect(tight.frame?.depth).toBe(3);
  });

  it('marks the L1 marker invalid for depth alone: the node is still valid, the depth no longer matches the frame', () => {
    expect(
      check(l1Node, { nodeId: l1Node.compactionId, depth: 1, generation: 1 }, stateFor(session, l1Node)),
    ).toEqual([]);
    expect(check(l1Node, tight.frame!, stateFor(session, l1Node))).toEqual([
      {
        condition: 'depth',
        ids: [l1Node.compactionId],
        detail: expect.stringContaining('marker at L1, frame at L3') as string,
      },
    ]);
  });

  it('supersedes every marker of the looser generation, so none of them is resumed from, whatever arrives first', () => {
    expect(trustedMarkers(loose.state).length).toBeGreaterThan(0);
    for (const decisions of [
      [...loose.decisions, ...tight.decisions],
      [...tight.decisions, ...loose.decisions],
    ]) {
      const state = foldDecisions(decisions);
      expect(frameOf(state)).toEqual(tight.frame);
      expect(trustedMarkers(state)).toEqual(trustedMarkers(tight.state));
      expect(trustedMarkers(state).every((m) => m.generation === 2 && m.depth === 3)).toBe(true);
      const plan = resumePlan(state, {
        tenantId: session[0]!.tenantId,
        sessionId: session[0]!.sessionId,
        l0Partition: 0,
      });
      expect(plan.frame).toEqual(tight.frame);
    }
  });
});
