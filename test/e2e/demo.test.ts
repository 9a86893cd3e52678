import { runDemo, type SessionOutcome } from '@tidemark/cli';
import { foldDecisions, trustedMarkers, type MarkerInvalid } from '@tidemark/core';
import { loadScenarios } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2ePipeline } from './pipeline.js';

// Every demo session through the real pipeline (Kafka, the registry, Redis; the four services in one
// process), asserting the decisions, the violation ids, the resume mode and that two resumes agree.

const scenarios = loadScenarios();
let outcomes: Map<string, SessionOutcome>;
let stop: () => Promise<void>;

beforeAll(async () => {
  const started = await e2ePipeline(scenarios);
  stop = started.stop;
  const result = await runDemo(started.pipeline, {
    env: started.env,
    logger: createLogger('e2e', 'warn'),
    scenarios,
    progress: () => undefined,
    settleTimeoutMs: 90_000,
  });
  outcomes = new Map(result.map((o) => [o.scenario.sessionId, o]));
}, 600_000);

afterAll(async () => {
  await stop?.();
});

const outcome = (sessionId: string): SessionOutcome => {
  const found = outcomes.get(sessionId);
  if (found === undefined) throw new Error(`no outcome for ${sessionId}`);
  return found;
};
const failedChecks = (o: SessionOutcome) =>
  o.journal.decisions.filter((d): d is MarkerInvalid => d.type === 'marker_invalid' && d.cause === 'check');
const violationsOf = (o: SessionOutcome) =>
  failedChecks(o).flatMap((d) => d.violations.map((v) => [v.condition, v.ids]));
const context = (o: SessionOutcome) => (o.resume.ok ? o.resume.context.canonical : '');

describe('every demo session, end to end', () => {
  it('settles on exactly what the core reference computes, and two resumes give one contextHash', () => {
    for (const sessionId of outcomes.keys()) {
      const o = outcome(sessionId);
      expect({ sessionId, matches: o.matchesReference }).toEqual({ sessionId, matches: true });
      expect(o.resume.ok && o.resumeAgain.ok).toBe(true);
      if (o.resume.ok && o.resumeAgain.ok) {
        expect(o.resumeAgain.result.contextHash).toBe(o.resume.result.contextHash);
      }
    }
  });
});

describe('what a model could work from', () => {
  it('each live resume answers the probe from the raw log, and the session report says how much at what compression', () => {
    for (const sessionId of outcomes.keys()) {
      const o = outcome(sessionId);
      const line = o.report.split('\n').find((l) => l.startsWith('  probe: '));
      expect(line, sessionId).toMatch(/^ {2}probe: 1\.000 of \d+ questions \(goal 1\/1/);
    }
    const migration = outcome('migration-strict').report;
    expect(migration).toMatch(/probe: .* at compression 0\.2[0-4]\d/);
    const context = outcome('migration-strict').resume;
    const system = context.ok ? context.result.messages[0]!.content : '';
    // What the digest says, as a person reads it: the task, what was done to which files, what not to retry.
    expect(system).toContain(
      'Goal: Please migrate the users table to split full_name into first_name and last_name.',
    );
    expect(system).toContain(
      '- run_migration --dry-run against staging: error at #11 (lock timeout during backfill) [call:dry-run]',
    );
    expect(system).toMatch(/- src\/db\/schema\.ts: .*edit_file #8/);
  });
});

describe('the migration agent', () => {
  it('under strict, every marker is emitted and the session resumes from the L2 digest', () => {
    const o = outcome('migration-strict');
    expect(failedChecks(o)).toEqual([]);
    expect(o.resume.ok && o.resume.result.mode).toBe('digest');
    expect(o.resume.ok && o.resume.result.frame?.depth).toBe(2);
    expect(context(o)).toContain('approach:add-column-backfill');
    expect(context(o)).toContain('migrations/003_down.sql');
  });

  it('under narrative, the digest that folded the rejection and dropped the rollback script is invalid (retention, artifacts)', () => {
    const o = outcome('migration-lossy');
    const digestFailure = failedChecks(o).find((d) => d.depth === 2);
    expect(digestFailure?.violations.map((v) => [v.condition, v.ids])).toEqual([
      ['retention', ['approach:add-column-backfill']],
      ['artifacts', ['migrations/003_down.sql', 'migrations/003_up.sql']],
    ]);
    expect(digestFailure?.fallback).toBeDefined();
  });

  it('is repaired at compaction time, so the resume is wholesale from a strict repair that carries the rejection and the script', () => {
    const o = outcome('migration-lossy');
    expect(o.resume.ok && o.resume.result.mode).toBe('digest');
    const node = o.journal.compactions.find((c) => o.resume.ok && c.compactionId === o.resume.result.nodeId);
    expect(node).toMatchObject({ tier: 2, summarizer: 'strict', attempt: 1 });
    expect(context(o)).toContain('approach:add-column-backfill');
    expect(context(o)).toContain('migrations/003_down.sql');
    expect(context(o)).not.toContain('agent explored approaches');
  });
});

describe('a tool call running across the compaction boundary', () => {
  it('marked UNRESOLVED in the summary: the marker is emitted', () => {
    const o = outcome('tool-call-unresolved');
    expect(failedChecks(o)).toEqual([]);
    const first = o.journal.compactions.find((c) => c.span.toSeq === 40 && c.attempt === 0);
    expect(first?.claims.unresolved.map((u) => u.itemId)).toContain('call:integration-suite');
  });

  it('left out of the summary: the marker is invalid for closure, naming the call', () => {
    const o = outcome('tool-call-dropped');
    expect(violationsOf(o)).toEqual([['closure', ['call:integration-suite']]]);
  });
});

describe('a superseded constraint', () => {
  it('is carried with its disposition, and the resume says SQLite replaced Postgres', () => {
    const o = outcome('storage-choice');
    expect(failedChecks(o)).toEqual([]);
    expect(o.resume.ok && o.resume.result.mode).toBe('digest');
    expect(context(o)).toContain('constraint:postgres');
    expect(context(o)).toContain('constraint:sqlite');
  });
});

describe('a replay under a tighter budget', () => {
  it('deepens the frame: the new generation frames the session as a whole, and the resume follows it', () => {
    const o = outcome('refactor-long');
    // The new generation is decided on its own nodes: none of its decisions names a marker of the first.
    const generationOne = new Set(
      o.journal.decisions.filter((d) => d.generation === 1).map((d) => d.markerId),
    );
    const generationTwo = o.journal.decisions.filter((d) => d.generation === 2);
    expect(generationOne.size).toBeGreaterThan(0);
    expect(generationTwo.length).toBeGreaterThan(0);
    expect(generationTwo.some((d) => generationOne.has(d.markerId))).toBe(false);
    // Nodes of the new generation that arrive below its frame are invalid for depth on their own check.
    const belowFrame = o.journal.decisions.filter(
      (d) => d.type === 'marker_invalid' && d.cause === 'check' && d.generation === 2,
    );
    expect(belowFrame.length).toBeGreaterThan(0);
    expect(
      belowFrame.every(
        (d) => d.type === 'marker_invalid' && d.violations.every((v) => v.condition === 'depth'),
      ),
    ).toBe(true);
    // Only the new generation's L3 markers are trusted, whichever generation's decisions came first.
    const trusted = trustedMarkers(foldDecisions(o.journal.decisions));
    expect(trusted.length).toBeGreaterThan(0);
    expect(trusted.every((d) => d.depth === 3 && d.generation === 2)).toBe(true);
    expect(trustedMarkers(foldDecisions([...generationTwo, ...o.journal.decisions]))).toEqual(trusted);
    expect(o.resume.ok && o.resume.result.frame).toMatchObject({ depth: 3, generation: 2 });
    expect(o.resume.ok && o.resume.result.mode).toBe('digest');
  });
});
