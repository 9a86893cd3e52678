import { definePolicy, foldTurns, runReference, type MarkerDecision } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { expandTranscript, loadScenario, loadScenarios, TranscriptError } from '../src/index.js';

const violations = (decisions: readonly MarkerDecision[]) =>
  decisions.flatMap((d) =>
    d.type === 'marker_invalid' && d.cause === 'check' ? d.violations.map((v) => [v.condition, v.ids]) : [],
  );

describe('the demo transcripts', () => {
  const sessions = loadScenarios();

  it('expand into valid L0: contiguous seqs, unique turn ids, every change accepted by the fold', () => {
    expect(sessions.length).toBeGreaterThanOrEqual(6);
    for (const session of sessions) {
      expect(session.turns.map((t) => t.seq)).toEqual(session.turns.map((_, i) => i + 1));
      expect(new Set(session.turns.map((t) => t.turnId)).size).toBe(session.turns.length);
      const { results } = foldTurns(session.tenantId, session.sessionId, session.turns);
      expect(results.filter((r) => !r.ok || r.rejected.length > 0)).toEqual([]);
    }
  });

  it('expand the same way every time', () => {
    expect(loadScenarios()).toEqual(sessions);
  });

  it('the lossy migration digest is caught for the rejection and the rollback script', () => {
    const lossy = loadScenario('migration').find((s) => s.sessionId === 'migration-lossy')!;
    const run = runReference(lossy.turns, { policy: definePolicy(lossy.policy) });
    expect(violations(run.decisions)).toContainEqual(['retention', ['approach:add-column-backfill']]);
    expect(violations(run.decisions)).toContainEqual([
      'artifacts',
      ['migrations/003_down.sql', 'migrations/003_up.sql'],
    ]);
  });

  it('the call running across the boundary fails closure when dropped, and passes when marked UNRESOLVED', () => {
    const [unresolved, dropped] = loadScenario('long-tool-call');
    const strict = runReference(unresolved!.turns, { policy: definePolicy(unresolved!.policy) });
    expect(strict.decisions.every((d) => d.type === 'marker_emitted')).toBe(true);
    expect(strict.compactions[0]!.claims.unresolved.map((u) => u.itemId)).toContain('call:integration-suite');
    const lossy = runReference(dropped!.turns, { policy: definePolicy(dropped!.policy) });
    expect(violations(lossy.decisions)).toEqual([['closure', ['call:integration-suite']]]);
  });
});

describe('expandTranscript', () => {
  it('refuses a malformed transcript with the path of the fault', () => {
    expect(() =>
      expandTranscript(
        {
          name: 'x',
          title: 't',
          description: 'd',
          tenantId: 'a',
          sessions: [{ sessionId: 's' }],
          turns: [{ role: 'robot', content: 'hi' }],
        },
        'x.json',
      ),
    ).toThrow(TranscriptError);
  });
});
