import { describe, expect, it } from 'vitest';
import { sessionSteps } from '../src/engine.js';

// A batch of many sessions is advanced a few sessions at a time: each session's records whole, in order.

const record = (sessionId: string, seq: number) => ({ value: { tenantId: 't', sessionId }, seq });

describe('sessionSteps', () => {
  it('keeps every session in one step, in the order its records came, at most n sessions a step', () => {
    const records = [
      record('a', 1),
      record('b', 1),
      record('c', 1),
      record('a', 2),
      record('d', 1),
      record('c', 2),
      record('e', 1),
    ];
    const steps = sessionSteps(records, 2);
    expect(steps.map((step) => step.map((r) => `${r.value.sessionId}${r.seq}`))).toEqual([
      ['a1', 'b1', 'a2'],
      ['c1', 'd1', 'c2'],
      ['e1'],
    ]);
  });

  it('leaves a batch of few sessions whole, and an empty one empty', () => {
    const records = [record('a', 1), record('b', 1), record('a', 2)];
    expect(sessionSteps(records, 256)).toEqual([records]);
    expect(sessionSteps([], 2)).toEqual([]);
  });
});
