import { definePolicy, generateSession, isVerdict, runReference } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { restoredSessions } from '../src/index.js';

// The frame store rebuilt from the markers topic: each session's decider state and decided compactions,
// from its decisions in log order (sessions interleaved as a partition has them).

describe('restoring the frame store from the markers topic', () => {
  it('gives every session the frame and trust of its run, and every compaction as published', () => {
    const runs = [1, 2, 3].map((seed) =>
      runReference(generateSession(seed, { tenantId: 'r', sessionId: `s-${seed}`, turns: 500 }), {
        policy: definePolicy({ summarizer: seed === 2 ? 'strict' : 'narrative', digestFanIn: 3 }),
      }),
    );
    // Interleave the sessions' decisions, each session's order kept.
    const log = [];
    for (let i = 0; log.length < runs.reduce((n, r) => n + r.decisions.length, 0); i++) {
      for (const run of runs) if (run.decisions[i] !== undefined) log.push(run.decisions[i]!);
    }
    const restored = restoredSessions(log);
    expect(restored.map((s) => s.sessionId)).toEqual(['s-1', 's-2', 's-3']);
    restored.forEach((session, i) => {
      const run = runs[i]!;
      expect(session.state).toEqual(run.state);
      const decided = new Set(run.decisions.filter(isVerdict).map((d) => d.compactionId));
      // Every compaction with a verdict; only a strict repair no verdict asked for has none.
      const undecided = run.compactions.filter((c) => !decided.has(c.compactionId));
      expect(undecided.every((c) => c.repairOf !== null)).toBe(true);
      expect([...session.published].sort()).toEqual([...decided].sort());
    });
  });
});
