import { describe, expect, it } from 'vitest';
import { canonicalJson, definePolicy, foldTurns, generateSession, runReference } from '../src/index.js';

describe('the session generator', () => {
  it('gives the same turns for the same seed and other turns for another', () => {
    expect(generateSession(42, { turns: 120 })).toEqual(generateSession(42, { turns: 120 }));
    expect(canonicalJson(generateSession(43, { turns: 120 }))).not.toBe(
      canonicalJson(generateSession(42, { turns: 120 })),
    );
  });

  it('makes valid sessions with every kind of state change', () => {
    const turns = generateSession(5, { turns: 600 });
    const { results } = foldTurns(turns[0]!.tenantId, turns[0]!.sessionId, turns);
    expect(results.every((r) => r.ok && !r.duplicate && r.rejected.length === 0)).toBe(true);
    const seen = new Set(
      turns.flatMap((t) =>
        t.changes.map((c) =>
          c.type === 'item_opened'
            ? c.kind
            : c.type === 'item_disposed'
              ? c.disposition
              : c.type === 'artifact_recorded'
                ? c.action
                : c.outcome,
        ),
      ),
    );
    expect([...seen].sort()).toEqual(
      [
        'approval_request',
        'cancelled',
        'constraint',
        'created',
        'deleted',
        'error',
        'failed',
        'file_handle',
        'modified',
        'ok',
        'rejected',
        'subprocess',
        'superseded',
        'tool_call',
      ].sort(),
    );
    expect(turns.map((t) => t.seq)).toEqual(turns.map((_, i) => i + 1));
  });
});

describe('the reference pipeline', () => {
  const turns = generateSession(9, { turns: 400 });

  it('under the strict summarizer fails nothing but depth', () => {
    const run = runReference(turns, { policy: definePolicy() });
    const conditions = run.decisions.flatMap((d) =>
      d.type === 'marker_invalid' ? d.violations.map((v) => v.condition) : [],
    );
    expect(new Set(conditions)).toEqual(new Set(['depth']));
    expect(run.compactions.every((c) => c.attempt === 0)).toBe(true);
    // What the oracle holds is what the wire can carry: a span has its five fields, nothing else.
    expect(new Set(run.compactions.map((c) => Object.keys(c.span).sort().join()))).toEqual(
      new Set(['fromOffset,fromSeq,l0Partition,toOffset,toSeq']),
    );
  });

  it('under the narrative summarizer is caught, and every repair passes all but depth', () => {
    const run = runReference(turns, { policy: definePolicy({ summarizer: 'narrative' }) });
    const repairs = run.compactions.filter((c) => c.repairOf !== null);
    expect(repairs.length).toBeGreaterThan(0);
    for (const repair of repairs) {
      const decision = run.decisions.find((d) => d.compactionId === repair.compactionId)!;
      expect(
        decision.type === 'marker_emitted' || decision.violations.every((v) => v.condition === 'depth'),
      ).toBe(true);
    }
  });

  it('replays byte for byte: the same turns and policy give the same compactions, ids and decisions', () => {
    const policy = definePolicy({ summarizer: 'narrative', digestTokenBudget: 3000 });
    const one = runReference(turns, { policy });
    const two = runReference(generateSession(9, { turns: 400 }), { policy });
    expect(canonicalJson(two.compactions)).toBe(canonicalJson(one.compactions));
    expect(canonicalJson(two.decisions)).toBe(canonicalJson(one.decisions));
    const other = runReference(turns, { policy: definePolicy({ summarizer: 'narrative' }) });
    expect(other.compactions[0]!.compactionId).not.toBe(one.compactions[0]!.compactionId);
  });

  it('compacts as a function of L0 and the policy alone: repairs and decisions never change the first attempts', () => {
    // A distributed compactor gets MarkerInvalid records late, or early: the tree must not care.
    const policy = definePolicy({ summarizer: 'narrative', digestFanIn: 2 });
    const repaired = runReference(turns, { policy, maxRepairs: 2 });
    const unrepaired = runReference(turns, { policy, maxRepairs: 0 });
    expect(repaired.compactions.some((c) => c.attempt > 0)).toBe(true);
    expect(canonicalJson(repaired.compactions.filter((c) => c.attempt === 0))).toBe(
      canonicalJson(unrepaired.compactions),
    );
    // A repair reads the strict renditions of its children and prior: it never quotes a lossy node.
    for (const r of repaired.compactions.filter((c) => c.attempt > 0)) {
      expect(r.narrative).not.toContain('explored approaches');
    }
    // A repair is the strict summary of the same span with the same prior as the node it repairs.
    const repair = repaired.compactions.find((c) => c.attempt === 1 && c.tier === 1)!;
    const original = unrepaired.compactions.find((c) => c.compactionId === repair.repairOf)!;
    expect(repair).toMatchObject({ span: original.span, children: original.children, summarizer: 'strict' });
  });

  it('skips duplicates and reports refusals without stopping', () => {
    // A redelivery of seq 11, then seq 61 early (a gap), then the rest in order.
    const withNoise = [...turns.slice(0, 50), turns[10]!, turns[60]!, ...turns.slice(50)];
    const run = runReference(withNoise, { policy: definePolicy() });
    expect(run.results.filter((r) => r.ok && r.duplicate).map((r) => r.seq)).toEqual([11]);
    expect(run.results.filter((r) => !r.ok).map((r) => !r.ok && r.reason)).toEqual(['seq_gap']);
    expect(canonicalJson(run.compactions)).toBe(
      canonicalJson(runReference(turns, { policy: definePolicy() }).compactions),
    );
  });
});
