import { describe, expect, it } from 'vitest';
import {
  advanceFrame,
  buildResumeContext,
  decideResume,
  invalidationsForFrame,
  markerEmitted,
  markerInvalid,
  rawCheckpoint,
  type Compaction,
  type MarkerDecision,
  type TurnEvent,
} from '../src/index.js';
import {
  artifact,
  digest,
  disposed,
  filler,
  frameAt,
  l1,
  opened,
  sessionId,
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
const invalid = (node: Compaction, decisions: readonly MarkerDecision[] = []) =>
  markerInvalid(node, [violation], rawCheckpoint(frameAt(node.tier), decisions, 0), 'check');
const plan = (frame: ReturnType<typeof frameAt> | null, decisions: readonly MarkerDecision[]) =>
  decideResume({ tenantId, sessionId, l0Partition: 0, frame, decisions });

describe('the resume decision', () => {
  it('resumes from the raw log when nothing has been decided', () => {
    expect(plan(null, [])).toEqual({
      mode: 'raw',
      tenantId,
      sessionId,
      frame: null,
      checkpoint: { markerId: null, compactionId: null, toSeq: 0, l0Partition: 0, l0Offset: null },
      rawFromSeq: 1,
      reason: 'no_marker',
    });
  });

  it('resumes in digest mode from the newest marker at the frame depth when it was emitted', () => {
    const result = plan(frameAt(1), [markerEmitted(a), markerEmitted(b)]);
    expect(result).toMatchObject({
      mode: 'digest',
      marker: { markerId: b.marker.markerId, compactionId: b.compactionId, toSeq: 8 },
      rawFromSeq: 9,
    });
  });

  it('falls back wholesale to the raw checkpoint when the newest marker at the frame depth is invalid', () => {
    const decisions = [markerEmitted(a), markerEmitted(b), invalid(c, [markerEmitted(a), markerEmitted(b)])];
    expect(plan(frameAt(1), decisions)).toMatchObject({
      mode: 'raw',
      reason: 'newest_invalid',
      checkpoint: { markerId: b.marker.markerId, compactionId: b.compactionId, toSeq: 8, l0Offset: 7 },
      rawFromSeq: 9,
    });
  });

  it('falls back to the session start when no valid marker exists at the frame depth', () => {
    expect(plan(frameAt(1), [invalid(a)])).toMatchObject({
      mode: 'raw',
      reason: 'newest_invalid',
      checkpoint: { markerId: null, toSeq: 0 },
      rawFromSeq: 1,
    });
  });

  it('does not trust a marker that was emitted and later invalidated by a depth change', () => {
    const frame = advanceFrame(advanceFrame(null, a), l2);
    const stale = invalidationsForFrame(frameAt(1), frame, [markerEmitted(a)]);
    expect(plan(frameAt(1), [markerEmitted(a), ...stale])).toMatchObject({
      mode: 'raw',
      reason: 'newest_invalid',
    });
    expect(plan(frame, [markerEmitted(a), ...stale, markerEmitted(l2)])).toMatchObject({
      mode: 'digest',
      marker: { compactionId: l2.compactionId },
    });
  });

  it('ignores markers at other depths than the frame', () => {
    expect(plan(frameAt(2), [markerEmitted(l2), markerEmitted(c)])).toMatchObject({
      mode: 'digest',
      marker: { compactionId: l2.compactionId },
      rawFromSeq: 9,
    });
  });
});

describe('frames', () => {
  it('move to a node at or above the frame depth, never below, and to any node of a newer generation', () => {
    const f1 = advanceFrame(null, a);
    expect(f1).toEqual({ nodeId: a.compactionId, depth: 1, generation: 1 });
    const f2 = advanceFrame(f1, l2);
    expect(f2.depth).toBe(2);
    expect(advanceFrame(f2, c)).toBe(f2);
    expect(advanceFrame(f2, { ...c, generation: 2 })).toEqual({
      nodeId: c.compactionId,
      depth: 1,
      generation: 2,
    });
    expect(advanceFrame({ ...f2, generation: 3 }, c)).toEqual({ ...f2, generation: 3 });
  });

  it('invalidate every marker pointing at another depth when the frame depth changes, with the new checkpoint', () => {
    const decisions = [markerEmitted(a), markerEmitted(b), markerEmitted(l2)];
    const frame = { nodeId: 'l3', depth: 3, generation: 1 };
    const stale = invalidationsForFrame(frameAt(2), frame, decisions);
    expect(stale.map((m) => [m.compactionId, m.cause, m.violations.map((v) => v.condition)])).toEqual([
      [a.compactionId, 'depth_change', ['depth']],
      [b.compactionId, 'depth_change', ['depth']],
      [l2.compactionId, 'depth_change', ['depth']],
    ]);
    expect(stale[0]!.fallback).toEqual({
      markerId: null,
      compactionId: null,
      toSeq: 0,
      l0Partition: 0,
      l0Offset: null,
    });
    expect(invalidationsForFrame(frameAt(2), { ...frameAt(2), nodeId: 'other' }, decisions)).toEqual([]);
  });
});

describe('the resume context', () => {
  const digestPlan = plan(frameAt(1), [markerEmitted(b)]);
  const after = turns.filter((t) => t.seq >= 9);

  it('is the node narrative and state block as one system message, then the raw turns after its boundary', () => {
    const context = buildResumeContext({ plan: digestPlan, node: b, turns: after });
    expect(context.messages.map((m) => m.role)).toEqual(['system', ...after.map((t) => t.role)]);
    const system = context.messages[0]!.content;
    expect(system).toContain(`Tidemark resume context: L1 node ${b.compactionId}, turns 5–8.`);
    expect(system).toContain('call-9 (tool_call) run_tests, opened at #3');
    expect(system).toContain('c-rev: reversible: the migration be reversible (since #1)');
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

  it('starts with the raw log alone from the session start', () => {
    const context = buildResumeContext({ plan: plan(null, []), node: null, turns });
    expect(context.messages.map((m) => m.content)).toEqual(turns.map((t) => t.content));
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
