import { describe, expect, it } from 'vitest';
import {
  callSignature,
  disposedKeys,
  foldTurns,
  regressionDetected,
  regressionIdOf,
  regressionsIn,
  watchedSteps,
  type RegressionWatch,
  type TurnEvent,
  type WatchedStep,
} from '../src/index.js';
import { closed, disposed, opened, sessionId, tenantId, turn } from './helpers.js';

// The regression watch's pure half: what a resume leaves to watch (from the state at its boundary), and
// which later turns start a ruled-out step again.

/** A session: a failed dry run, a rejected deploy, a superseded constraint and a call that went well. */
const history: TurnEvent[] = [
  turn(1, 'assistant', 'dry run', [
    opened('call-1', 'tool_call', 'run_migration', '{"target":"staging","dryRun":true}'),
  ]),
  turn(2, 'tool', 'lock timeout', [closed('call-1', 'error')]),
  turn(3, 'assistant', 'deploy', [opened('call-2', 'tool_call', 'deploy', '--env prod')]),
  turn(4, 'user', 'no', [disposed('call-2', 'rejected', 'not before the migration')]),
  turn(5, 'user', 'keep it online', [opened('c-1', 'constraint', 'online migration')]),
  turn(6, 'user', 'downtime is fine now', [disposed('c-1', 'superseded', 'window booked', 'c-2')]),
  turn(7, 'assistant', 'list', [opened('call-3', 'tool_call', 'ls', '-la')]),
  turn(8, 'tool', 'ok', [closed('call-3', 'ok')]),
  turn(9, 'user', 'thanks: the approach is dropped', [disposed('approach:blue-green', 'rejected', 'cost')]),
];

/** The watched steps at a boundary, read as the resume service reads them (two queries). */
function stepsAt(turns: readonly TurnEvent[], boundarySeq: number): WatchedStep[] {
  const { fold } = foldTurns(tenantId, sessionId, turns);
  const query = { tenantId, sessionId, fromSeq: 1, toSeq: boundarySeq, itemIds: [], itemKeys: [], paths: [] };
  const span = fold.stateAt(query);
  return watchedSteps(fold.stateAt({ ...query, itemIds: disposedKeys(span) }));
}

const watch: RegressionWatch = { nodeId: 'node-1', boundarySeq: 9, resumedAtSeq: 12 };

function regressions(steps: readonly WatchedStep[], next: TurnEvent) {
  const bySignature = new Map(steps.map((s) => [s.signature, s]));
  return regressionsIn(next, watch, (s) => bySignature.get(s));
}

describe('the regression watch', () => {
  it('watches what failed, was rejected or was superseded, and nothing that went well', () => {
    expect(stepsAt(history, 9).map((s) => [s.itemId, s.ruledOut, s.seq])).toEqual([
      ['call-1', 'failed', 2],
      ['call-2', 'rejected', 4],
      ['c-1', 'superseded', 6],
    ]);
    // Only up to the boundary: a step ruled out after it is in the agent's raw turns.
    expect(stepsAt(history, 3).map((s) => s.itemId)).toEqual(['call-1']);
  });

  it('flags the same call again, its arguments in another order or spacing, naming both turns', () => {
    const steps = stepsAt(history, 9);
    const again = turn(13, 'assistant', 'retry the dry run', [
      opened('call-9', 'tool_call', 'run_migration', '{ "dryRun": true,  "target": "staging" }'),
    ]);
    expect(regressions(steps, again)).toEqual([
      { seq: 13, itemId: 'call-9', prior: steps.find((s) => s.itemId === 'call-1') },
    ]);
    const deploy = turn(14, 'assistant', 'deploy', [
      opened('call-10', 'tool_call', 'deploy', ' --env   prod '),
    ]);
    expect(regressions(steps, deploy).map((r) => [r.itemId, r.prior.itemId, r.prior.ruledOut])).toEqual([
      ['call-10', 'call-2', 'rejected'],
    ]);
  });

  it('does not flag a similar call with other arguments, another tool, or a call that went well', () => {
    const steps = stepsAt(history, 9);
    const other = turn(13, 'assistant', 'dry run against dev', [
      opened('call-9', 'tool_call', 'run_migration', '{"target":"dev","dryRun":true}'),
      opened('call-10', 'tool_call', 'migrate', '{"target":"staging","dryRun":true}'),
      opened('call-11', 'tool_call', 'ls', '-la'),
    ]);
    expect(regressions(steps, other)).toEqual([]);
  });

  it('flags a superseded constraint opened again, but not a call of the same name', () => {
    const steps = stepsAt(history, 9);
    const constraint = turn(13, 'user', 'keep it online after all', [
      opened('c-3', 'constraint', 'online migration'),
    ]);
    expect(regressions(steps, constraint).map((r) => [r.itemId, r.prior.ruledOut, r.prior.seq])).toEqual([
      ['c-3', 'superseded', 6],
    ]);
    const call = turn(14, 'assistant', 'x', [opened('c-4', 'tool_call', 'online migration')]);
    expect(regressions(steps, call)).toEqual([]);
  });

  it('looks only at turns after the resumed context, and at steps ruled out up to the boundary', () => {
    const steps = stepsAt(history, 9);
    const inContext = turn(12, 'assistant', 'retry', [
      opened('call-9', 'tool_call', 'run_migration', '{"target":"staging","dryRun":true}'),
    ]);
    expect(regressions(steps, inContext)).toEqual([]);
    const late = { ...steps[0]!, seq: 10 };
    const after = turn(13, 'assistant', 'retry', [
      opened('call-9', 'tool_call', 'run_migration', '{"target":"staging","dryRun":true}'),
    ]);
    expect(regressions([late], after)).toEqual([]);
  });

  it('gives a content-derived event: the same regression twice is one id', () => {
    const steps = stepsAt(history, 9);
    const again = turn(13, 'assistant', 'retry', [
      opened('call-9', 'tool_call', 'run_migration', '{"target":"staging","dryRun":true}'),
    ]);
    const [found] = regressions(steps, again);
    const event = regressionDetected({ tenantId, sessionId }, found!, watch);
    expect(event).toEqual({
      regressionId: regressionIdOf({ tenantId, sessionId, seq: 13, itemId: 'call-9', priorSeq: 2 }),
      tenantId,
      sessionId,
      seq: 13,
      itemId: 'call-9',
      name: 'run_migration',
      detail: '{"target":"staging","dryRun":true}',
      priorSeq: 2,
      priorItemId: 'call-1',
      ruledOut: 'failed',
      nodeId: 'node-1',
      boundarySeq: 9,
      resumedAtSeq: 12,
    });
    expect(regressionDetected({ tenantId, sessionId }, found!, watch)).toEqual(event);
    expect(callSignature({ kind: 'tool_call', name: 'a', detail: 'x  y' })).toBe(
      callSignature({ kind: 'tool_call', name: 'a', detail: ' x y' }),
    );
    expect(callSignature({ kind: 'tool_call', name: 'a', detail: 'x' })).not.toBe(
      callSignature({ kind: 'subprocess', name: 'a', detail: 'x' }),
    );
  });
});
