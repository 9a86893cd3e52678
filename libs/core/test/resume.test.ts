import { describe, expect, it } from 'vitest';
import {
  advanceFrame,
  buildResumeContext,
  decide,
  evolve,
  foldDecisions,
  frameOf,
  initialState,
  markerEmitted,
  markerInvalid,
  rawTurnText,
  resumePlan,
  trustedMarkers,
  type Compaction,
  type MarkerDecision,
  type TurnEvent,
} from '../src/index.js';
import {
  artifact,
  digest,
  disposed,
  filler,
  l1,
  opened,
  sessionId,
  stateFor,
  tenantId,
  turn,
} from './helpers.js';

const turns: TurnEvent[] = [
  turn(1, 'user', 'Keep it reversible.', [
    opened('c-rev', 'constraint', 'reversible', 'the migration be reversible'),
  ]),
  turn(2, 'user', 'Not add-column-then-backfill.', [
    disposed('approach:add-column-backfill', 'rejected', 'failed dry run'),
  ]),
  turn(3, 'assistant', 'Rollback written.', [
    artifact('migrations/003_down.sql', 'created', 'sha256:down'),
    opened('call-9', 'tool_call', 'run_tests'),
  ]),
  ...filler(4, 12),
];
const [a, b, c] = [l1(turns, 1, 4), l1(turns, 5, 8), l1(turns, 9, 12)];
const l2 = digest(turns, [a, b]);
const violation = { condition: 'closure' as const, ids: ['x'], detail: 'x: missing' };
const invalid = (node: Compaction) =>
  markerInvalid(
    node,
    [violation],
    { markerId: null, compactionId: null, toSeq: 0, l0Partition: 0, l0Offset: null },
    'check',
  );
const plan = (decisions: readonly MarkerDecision[]) =>
  resumePlan(foldDecisions(decisions), { tenantId, sessionId, l0Partition: 0 });
/** The decisions the decider makes for these nodes in turn, each checked on its true state. */
const decided = (nodes: readonly Compaction[]) => {
  const out: MarkerDecision[] = [];
  let state = initialState;
  for (const node of nodes) {
    const made = decide({ node, state: stateFor(turns, node) }, state);
    state = made.reduce(evolve, state);
    out.push(...made);
  }
  return out;
};

describe('the resume plan', () => {
  it('resumes from the raw log when nothing has been decided', () => {
    expect(plan([])).toEqual({
      mode: 'raw',
      tenantId,
      sessionId,
      frame: null,
      checkpoint: { markerId: null, compactionId: null, toSeq: 0, l0Partition: 0, l0Offset: null },
      rawFromSeq: 1,
      reason: 'no_marker',
    });
  });

  it('resumes in digest mode from the node framing the session when its marker was emitted', () => {
    expect(plan([markerEmitted(a), markerEmitted(b)])).toMatchObject({
      mode: 'digest',
      frame: { nodeId: b.compactionId, depth: 1, generation: 1 },
      marker: { markerId: b.marker.markerId, compactionId: b.compactionId, toSeq: 8 },
      rawFromSeq: 9,
    });
  });

  it("falls back wholesale to the raw checkpoint when the framing node's marker is invalid", () => {
    expect(plan([markerEmitted(a), markerEmitted(b), invalid(c)])).toMatchObject({
      mode: 'raw',
      reason: 'newest_invalid',
      checkpoint: { markerId: b.marker.markerId, compactionId: b.compactionId, toSeq: 8, l0Offset: 7 },
      rawFromSeq: 9,
    });
  });

  it('falls back to the session start when no valid marker exists at the frame depth', () => {
    expect(plan([invalid(a)])).toMatchObject({
      mode: 'raw',
      reason: 'newest_invalid',
      checkpoint: { markerId: null, toSeq: 0 },
      rawFromSeq: 1,
    });
  });

  it('does not trust a marker that was emitted and later invalidated by a depth change', () => {
    const decisions = decided([a, b, l2]);
    expect(
      decisions.map((d) => [d.compactionId, d.type, d.type === 'marker_invalid' ? d.cause : 'check']),
    ).toEqual([
      [a.compactionId, 'marker_emitted', 'check'],
      [b.compactionId, 'marker_emitted', 'check'],
      [a.compactionId, 'marker_invalid', 'depth_change'],
      [b.compactionId, 'marker_invalid', 'depth_change'],
      [l2.compactionId, 'marker_emitted', 'check'],
    ]);
    expect(plan(decisions.slice(0, 4))).toMatchObject({ mode: 'raw', reason: 'newest_invalid' });
    expect(plan(decisions)).toMatchObject({ mode: 'digest', marker: { compactionId: l2.compactionId } });
  });

  it('decides a node below the frame depth invalid for depth, and resumes from the frame', () => {
    const decisions = decided([a, b, l2, c]);
    expect(decisions.at(-1)).toMatchObject({
      type: 'marker_invalid',
      cause: 'check',
      violations: [{ condition: 'depth' }],
      fallback: { compactionId: l2.compactionId },
    });
    expect(plan(decisions)).toMatchObject({
      mode: 'digest',
      marker: { compactionId: l2.compactionId },
      rawFromSeq: 9,
    });
  });
});

describe('frames', () => {
  it('move to a node at or above the frame depth, never below', () => {
    const f1 = advanceFrame(null, a);
    expect(f1).toEqual({ nodeId: a.compactionId, depth: 1, generation: 1 });
    const f2 = advanceFrame(f1, l2);
    expect(f2.depth).toBe(2);
    expect(advanceFrame(f2, c)).toBe(f2);
  });

  it("are the newest generation's: an older generation is superseded as a whole, whatever arrives when", () => {
    const newer = (node: Compaction) => ({ ...markerEmitted(node), generation: 2 });
    const older = [markerEmitted(a), markerEmitted(b), markerEmitted(l2)];
    for (const decisions of [
      [...older, newer(a)],
      [newer(a), ...older],
      [markerEmitted(a), newer(a), markerEmitted(b), markerEmitted(l2)],
    ]) {
      const state = foldDecisions(decisions);
      expect(frameOf(state)).toEqual({ nodeId: a.compactionId, depth: 1, generation: 2 });
      expect(trustedMarkers(state)).toEqual([newer(a)]);
    }
  });
});

describe('the resume context', () => {
  const digestPlan = plan([markerEmitted(b)]);
  const after = turns.filter((t) => t.seq >= 9);

  it('is the node narrative and state block as one system message, then the raw turns after its boundary', () => {
    const context = buildResumeContext({ plan: digestPlan, node: b, turns: after });
    expect(context.messages.map((m) => m.role)).toEqual(['system', ...after.map((t) => t.role)]);
    const system = context.messages[0]!.content;
    expect(system).toContain(`Tidemark resume context: L1 node ${b.compactionId}, turns 5–8.`);
    expect(system).toContain('- run_tests (tool_call opened at #3) [call-9]');
    expect(system).toContain('- reversible: the migration be reversible (since #1) [c-rev]');
    expect(context.messages.slice(1).map((m) => m.content)).toEqual(after.map((t) => t.content));
  });

  it('is byte-identical for the same plan, node and turns, and its hash says so', () => {
    const one = buildResumeContext({ plan: digestPlan, node: b, turns: after });
    const two = buildResumeContext({ plan: digestPlan, node: b, turns: after.map((t) => ({ ...t })) });
    expect(two.canonical).toBe(one.canonical);
    expect(two.contextHash).toBe(one.contextHash);
    expect(one.contextHash).toMatch(/^[0-9a-f]{64}$/);
    const changed = buildResumeContext({
      plan: digestPlan,
      node: b,
      turns: [{ ...after[0]!, content: 'other' }, ...after.slice(1)],
    });
    expect(changed.contextHash).not.toBe(one.contextHash);
    const renarrated = buildResumeContext({
      plan: digestPlan,
      node: { ...b, narrative: 'another narrative' },
      turns: after,
    });
    expect(renarrated.contextHash).not.toBe(one.contextHash);
  });

  it('starts with the raw log alone from the session start, each turn with the state changes it made', () => {
    const context = buildResumeContext({ plan: plan([]), node: null, turns });
    expect(context.messages.map((m) => m.content)).toEqual(turns.map(rawTurnText));
    expect(context.messages[1]!.content).toBe(
      'Not add-column-then-backfill.\n[state: approach:add-column-backfill rejected: failed dry run]',
    );
    expect(context.messages[2]!.content).toBe(
      'Rollback written.\n[state: migrations/003_down.sql created; opened call-9 (tool_call) run_tests]',
    );
    // A turn that changed nothing is its content alone.
    expect(context.messages.at(-1)!.content).toBe(turns.at(-1)!.content);
  });

  it('refuses a node the plan does not name, or raw turns that do not follow its boundary', () => {
    expect(() => buildResumeContext({ plan: digestPlan, node: a, turns: after })).toThrow(/plan starts from/);
    expect(() => buildResumeContext({ plan: digestPlan, node: null, turns: after })).toThrow(
      /plan starts from/,
    );
    expect(() => buildResumeContext({ plan: digestPlan, node: b, turns: after.slice(1) })).toThrow(
      /contiguous/,
    );
  });
});
