import { rawTurnText } from '@tidemark/core';
import { runDemo, type SessionOutcome } from '@tidemark/cli';
import { loadScenario } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2ePipeline } from './pipeline.js';

// With repairs switched off (MAX_REPAIRS=0), a lossy digest stays invalid: the session must resume
// wholesale from the raw checkpoint, never from the distrusted node, and still deterministically.

const scenarios = loadScenario('migration').filter((s) => s.sessionId === 'migration-lossy');
let outcome: SessionOutcome;
let stop: () => Promise<void>;

beforeAll(async () => {
  const started = await e2ePipeline(scenarios, { MAX_REPAIRS: '0' });
  stop = started.stop;
  const [result] = await runDemo(started.pipeline, {
    env: started.env,
    logger: createLogger('e2e', 'warn'),
    scenarios,
    progress: () => undefined,
    settleTimeoutMs: 90_000,
  });
  outcome = result!;
}, 300_000);

afterAll(async () => {
  await stop?.();
});

describe('a lossy digest that is never repaired', () => {
  it('resumes in raw mode from the session start, because no marker at the frame depth is trusted', () => {
    expect(outcome.matchesReference).toBe(true);
    expect(outcome.resume.ok).toBe(true);
    if (!outcome.resume.ok) return;
    expect(outcome.resume.result).toMatchObject({
      mode: 'raw',
      reason: 'newest_invalid',
      nodeId: null,
      rawFromSeq: 1,
      rawToSeq: outcome.scenario.turns.length,
    });
    expect(outcome.resume.result.frame?.depth).toBe(2);
  });

  it('carries no part of the distrusted node, only the raw turns, and two resumes agree', () => {
    if (!outcome.resume.ok || !outcome.resumeAgain.ok) throw new Error('resume failed');
    const distrusted = outcome.journal.compactions.find((c) => c.tier === 2)!;
    expect(outcome.resume.context.canonical).not.toContain(distrusted.narrative);
    expect(outcome.resume.context.canonical).not.toContain(distrusted.compactionId);
    expect(outcome.resume.result.messages.map((m) => m.content)).toEqual(
      outcome.scenario.turns.map(rawTurnText),
    );
    expect(outcome.resumeAgain.result.contextHash).toBe(outcome.resume.result.contextHash);
  });
});
