import { definePolicy, generateSession, runReference, trustedMarkers } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { restoredSessions } from '../src/index.js';

// The frame store rebuilt from the markers topic: each session's frame, trusted markers and published
// compactions, from its decisions in log order (sessions interleaved as a partition has them).

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
      expect(session.frame).toEqual(run.frame);
      expect(session.trusted).toEqual(trustedMarkers(run.decisions));
      expect([...session.published].sort()).toEqual(run.compactions.map((c) => c.compactionId).sort());
    });
  });
});
