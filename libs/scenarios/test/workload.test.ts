import { definePolicy, runReference } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { generateWorkload } from '../src/index.js';

const openAcross = (turns: ReturnType<typeof generateWorkload>[number], boundary: number) => {
  const open = new Set<string>();
  for (const turn of turns.slice(0, boundary)) {
    for (const change of turn.changes) {
      if (change.type === 'item_opened' && change.kind === 'tool_call') open.add(change.itemId);
      if (change.type === 'item_closed') open.delete(change.itemId);
    }
  }
  return open.size;
};

describe('the workload generator', () => {
  it('is deterministic and names its sessions', () => {
    const a = generateWorkload({ tenantId: 'w', sessions: 3, turns: 50 });
    expect(generateWorkload({ tenantId: 'w', sessions: 3, turns: 50 })).toEqual(a);
    expect(a.map((s) => s[0]!.sessionId)).toEqual(['workload-0001', 'workload-0002', 'workload-0003']);
    expect(a.every((s) => s.length === 50)).toBe(true);
  });

  it('turns its rates into events: more long calls leave more calls open across boundaries', () => {
    const count = (longCalls: number) =>
      generateWorkload({ tenantId: 'w', sessions: 20, turns: 80, rates: { longCalls } }).reduce(
        (sum, turns) => sum + openAcross(turns, 40),
        0,
      );
    expect(count(0.8)).toBeGreaterThan(count(0) * 2);
  });

  it('with no rejections, failures or artifacts, no disposition or artifact appears', () => {
    const sessions = generateWorkload({
      tenantId: 'w',
      sessions: 5,
      rates: { rejections: 0, failures: 0, artifacts: 0 },
    });
    const kinds = sessions.flat().flatMap((t) => t.changes.map((c) => c.type));
    expect(kinds).not.toContain('artifact_recorded');
    const negative = sessions
      .flat()
      .flatMap((t) => t.changes)
      .filter((c) => c.type === 'item_disposed' && c.disposition !== 'superseded');
    expect(negative.filter((c) => c.type === 'item_disposed' && c.itemKey.startsWith('approach:'))).toEqual(
      [],
    );
  });

  it('gives the narrative summarizer something to lose and the strict one nothing', () => {
    const [turns] = generateWorkload({ tenantId: 'w', sessions: 1, turns: 120 });
    const strict = runReference(turns!, { policy: definePolicy() });
    expect(strict.decisions.filter((d) => d.type === 'marker_invalid' && d.cause === 'check')).toEqual([]);
    const lossy = runReference(turns!, { policy: definePolicy({ summarizer: 'narrative' }) });
    expect(lossy.decisions.some((d) => d.type === 'marker_invalid' && d.cause === 'check')).toBe(true);
  });
});
