import { definePolicy, generateSession, planNodeId, runReference, type ResumePlan } from '@tidemark/core';
import { parseConfig } from '@tidemark/service';
import fc from 'fast-check';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createResumeClientFrom, type PlanReader, type SessionLog, type TurnReader } from '../src/client.js';
import { policiesOf, resumeConfigSchema } from '../src/config.js';
import { resumeMetrics } from '../src/metrics.js';
import { applyDecisions, emptySessionState, splitStoredPlan, storedPlanOf } from '../src/session-plan.js';
import { compactionDue, StaleTracker, stalenessOf, type CompactionDue } from '../src/stale.js';

// The stale check without infrastructure: the due boundary against core's reference, the tracker (one
// lookup per boundary, one warning per episode, the gauge's count), the client over in-memory stores
// (the decided boundary from the plan, or from the worker state for an older plan; the contextHash
// untouched), and the configuration.

const ref = { tenantId: 't', sessionId: 's' };

function capture() {
  const lines: { level: number; msg: string; [key: string]: unknown }[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
  );
  return { logger, warnings: () => lines.filter((l) => l.level === 40) };
}

describe('the due L1 boundary', () => {
  it('is never due once every decision of a reference run is applied, and is due at the last L1 when its decisions are missing', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 140 }),
        fc.integer({ min: 2, max: 25 }),
        fc.integer({ min: 2, max: 4 }),
        fc.constantFrom('strict', 'narrative'),
        (seed, length, l1EveryTurns, digestFanIn, summarizer) => {
          // given a session compacted and decided by core's reference
          const policy = definePolicy({ l1EveryTurns, digestFanIn, summarizer });
          const turns = generateSession(seed, { ...ref, turns: length });
          const run = runReference(turns, { policy });
          const { state } = applyDecisions(
            emptySessionState(ref.tenantId, ref.sessionId),
            run.decisions.map((decision, offset) => ({ offset, decision })),
          );
          // when every decision is in: the next boundary is past the last turn
          const all = compactionDue(state.decidedL1ToSeq, length, l1EveryTurns);
          expect(all.due).toBe(false);
          expect(all.dueSeq).toBe(Math.floor(length / l1EveryTurns) * l1EveryTurns + l1EveryTurns);
          // when the decisions of the last L1 (and everything after it) are missing: due there
          const lastL1 = Math.floor(length / l1EveryTurns) * l1EveryTurns;
          const earlier = run.decisions.filter((d) => d.toSeq < lastL1);
          const { state: stuck } = applyDecisions(
            emptySessionState(ref.tenantId, ref.sessionId),
            earlier.map((decision, offset) => ({ offset, decision })),
          );
          const missing = compactionDue(stuck.decidedL1ToSeq, length, l1EveryTurns);
          expect(missing.due).toBe(lastL1 > 0);
          if (lastL1 > 0) expect(missing.dueSeq).toBe(lastL1);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('is stored with the plan and read back from it, leaving core’s plan as it was', () => {
    const turns = generateSession(4, { ...ref, turns: 35 });
    const run = runReference(turns, { policy: definePolicy({ l1EveryTurns: 10 }) });
    const { state } = applyDecisions(
      emptySessionState(ref.tenantId, ref.sessionId),
      run.decisions.map((decision, offset) => ({ offset, decision })),
    );
    const stored = storedPlanOf({ ...state, plan: state.plan! });
    const read = splitStoredPlan(JSON.parse(JSON.stringify(stored)) as ResumePlan);
    expect(read).toEqual({ plan: state.plan, decidedL1ToSeq: 30 });
    // A plan without it is a corrupt store (an older store is rebuilt before it is read), said so.
    expect(() => splitStoredPlan(state.plan!)).toThrow(/no decidedL1ToSeq/);
  });

  it('is stale only past the bound, with the time it became due', () => {
    const since = Date.UTC(2026, 11, 1, 12, 0, 0);
    expect(stalenessOf(since, since + 30_000, 30_000)).toBeNull();
    expect(stalenessOf(since, since + 30_001, 30_000)).toEqual({
      since: '2026-12-01T12:00:00.000Z',
      reason: 'compaction_overdue',
    });
  });
});

describe('the stale tracker', () => {
  const due = (dueSeq: number, isDue = true): CompactionDue => ({
    l1EveryTurns: 10,
    decidedL1ToSeq: dueSeq - 10,
    dueSeq,
    due: isDue,
  });

  it('looks the due turn up once per boundary, warns once when a session is first found stale, and counts it', async () => {
    let now = 1_000_000;
    const { logger, warnings } = capture();
    const tracker = new StaleTracker({ staleAfterMs: 5_000, logger, now: () => now });
    let lookups = 0;
    const appendTime = () => {
      lookups += 1;
      return Promise.resolve(999_000);
    };
    // given a due boundary appended 1 s ago: not stale yet
    expect(await tracker.evaluate(ref, due(20), appendTime)).toBeNull();
    expect(tracker.staleSessions()).toBe(0);
    // when 5 s more pass: stale, since the append time, one warning
    now += 5_000;
    expect(await tracker.evaluate(ref, due(20), appendTime)).toEqual({
      since: new Date(999_000).toISOString(),
      reason: 'compaction_overdue',
    });
    for (let i = 0; i < 5; i += 1) await tracker.evaluate(ref, due(20), appendTime);
    expect(lookups).toBe(1);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ tenantId: 't', sessionId: 's', dueSeq: 20, decidedL1ToSeq: 10 });
    expect(tracker.staleSessions()).toBe(1);
    // then the boundary is decided (the next one is not due): no longer counted
    expect(await tracker.evaluate(ref, due(30, false), appendTime)).toBeNull();
    expect(tracker.staleSessions()).toBe(0);
    // a later boundary overdue again is a new episode: a second lookup and a second warning
    expect(await tracker.evaluate(ref, due(30), appendTime)).not.toBeNull();
    expect([lookups, warnings().length]).toEqual([2, 2]);
    // an evaluation older than the window no longer counts
    now += 16 * 60_000;
    expect(tracker.staleSessions()).toBe(0);
  });

  it('uses the time it first found the boundary due when turns.l0 cannot tell, and retries a failed lookup', async () => {
    let now = 50_000;
    const tracker = new StaleTracker({ staleAfterMs: 1_000, now: () => now });
    expect(await tracker.evaluate(ref, due(20), () => Promise.resolve(null))).toBeNull();
    now += 1_001;
    expect(await tracker.evaluate(ref, due(20), () => Promise.resolve(1))).toEqual({
      since: new Date(50_000).toISOString(),
      reason: 'compaction_overdue',
    });
    let tries = 0;
    const failing = () => {
      tries += 1;
      return Promise.reject(new Error('kafka down'));
    };
    expect(await tracker.evaluate({ ...ref, sessionId: 'other' }, due(20), failing)).toBeNull();
    now += 2_000;
    expect(await tracker.evaluate({ ...ref, sessionId: 'other' }, due(20), failing)).not.toBeNull();
    expect(tries).toBe(2);
  });
});

describe('the client’s stale check (in-memory stores)', () => {
  // A session of 25 turns, L1 every 10: decided through #10 only, so the L1 at #20 is due.
  const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 4 });
  const turns = generateSession(6, { ...ref, turns: 25 });
  const run = runReference(turns, { policy });
  const nodeOf = (plan: ResumePlan) => {
    const id = planNodeId(splitStoredPlan(plan).plan);
    return id === null ? null : run.compactions.find((c) => c.compactionId === id)!;
  };

  function world(options: {
    decidedThrough: number;
    appendedAt?: number;
    broken?: { seq: number; reason: string };
    stalled?: { expectedSeq: number; since: string | null };
  }) {
    const decisions = run.decisions.filter((d) => d.toSeq <= options.decidedThrough);
    const { state } = applyDecisions(
      emptySessionState(ref.tenantId, ref.sessionId),
      decisions.map((decision, offset) => ({ offset, decision })),
    );
    const plan: ResumePlan = storedPlanOf({ ...state, plan: state.plan! });
    let appendLookups = 0;
    const plans: PlanReader = {
      read: () =>
        Promise.resolve({ ok: true, plan, node: nodeOf(plan), compactedToSeq: options.decidedThrough }),
      recordContextHash: (_ref, _key, hash) => Promise.resolve(hash),
    };
    const log: SessionLog = {
      epoch: () => Promise.resolve('e'),
      watermark: () =>
        Promise.resolve({ appliedSeq: 25, broken: options.broken ?? null, stalled: options.stalled ?? null }),
      l0Position: (_t, _s, seq) => Promise.resolve({ partition: 0, offset: seq - 1 }),
    };
    const reader: TurnReader = {
      read: (span) => Promise.resolve(turns.filter((t) => t.seq >= span.fromSeq && t.seq <= span.toSeq)),
      appendTime: (at) => {
        appendLookups += 1;
        expect(at).toEqual({ topic: 'turns', partition: 0, offset: 19, key: 't/s' });
        return Promise.resolve(options.appendedAt ?? 0);
      },
    };
    return { state, plans, log, reader, counts: () => ({ appendLookups }) };
  }

  const clientDeps = (w: ReturnType<typeof world>) => ({
    plans: w.plans,
    log: w.log,
    turns: w.reader,
    turnsTopic: 'turns',
    policyFor: () => policy,
    staleAfterMs: 1_000,
    contextCacheBytes: 0,
    divergenceChecks: false,
  });
  const create = (w: ReturnType<typeof world>, extra: { now?: () => number; registry?: Registry } = {}) =>
    createResumeClientFrom({
      ...clientDeps(w),
      ...(extra.now === undefined ? {} : { now: extra.now }),
      ...(extra.registry === undefined ? {} : { metrics: resumeMetrics(extra.registry) }),
    });

  it('answers stale with the due turn’s append time, and the same contextHash as when it is not stale', async () => {
    const stuck = world({ decidedThrough: 10, appendedAt: Date.UTC(2026, 11, 4, 9, 0, 0) });
    const registry = new Registry();
    const client = create(stuck, { now: () => Date.UTC(2026, 11, 4, 9, 0, 2), registry });
    const outcome = await client.resume('t', 's');
    if (!outcome.ok) throw new Error(outcome.code);
    expect(outcome.result.stale).toEqual({ since: '2026-12-04T09:00:00.000Z', reason: 'compaction_overdue' });
    // Within the bound (another instance, whose clock is 0.5 s after the append): the same context, not stale.
    const fresh = create(world({ decidedThrough: 10, appendedAt: Date.UTC(2026, 11, 4, 9, 0, 0) }), {
      now: () => Date.UTC(2026, 11, 4, 9, 0, 0, 500),
    });
    const again = await fresh.resume('t', 's');
    if (!again.ok) throw new Error(again.code);
    expect(again.result.stale).toBeNull();
    expect(again.result.contextHash).toBe(outcome.result.contextHash);
    const { stale: _stale, ...rest } = outcome.result;
    const { stale: _none, ...restAgain } = again.result;
    expect(rest).toEqual(restAgain);
    // Core's plan, as the worker decided it, without the stored boundary.
    const expected = stuck.state.plan!;
    expect(expected).toMatchObject({ mode: 'digest', rawFromSeq: 11 });
    expect(outcome.context.plan).toEqual(expected);
    expect(await registry.metrics()).toMatch(/tidemark_resume_stale_sessions 1/);
    client.release();
    expect(await registry.metrics()).toMatch(/tidemark_resume_stale_sessions 0/);

    const status = await client.status('t', 's');
    expect(status).toEqual({
      ok: true,
      status: {
        tenantId: 't',
        sessionId: 's',
        plan: {
          mode: 'digest',
          reason: null,
          markerId: expected.mode === 'digest' ? expected.marker.markerId : null,
          nodeId: expected.mode === 'digest' ? expected.marker.compactionId : null,
          frame: expected.frame,
          rawFromSeq: 11,
        },
        appliedSeq: 25,
        lastCompactedSeq: 10,
        compaction: { l1EveryTurns: 10, decidedL1ToSeq: 10, dueSeq: 20, due: true },
        stale: { since: '2026-12-04T09:00:00.000Z', reason: 'compaction_overdue' },
        broken: null,
        stalled: null,
        settled: false,
      },
    });
    expect(stuck.counts()).toEqual({ appendLookups: 1 });
  });

  it('reads nothing more when the due compaction is decided', async () => {
    const decided = world({ decidedThrough: 20 });
    const client = create(decided);
    const outcome = await client.resume('t', 's');
    if (!outcome.ok) throw new Error(outcome.code);
    expect(outcome.result.stale).toBeNull();
    const status = await client.status('t', 's');
    expect(status.ok && status.status.compaction).toEqual({
      l1EveryTurns: 10,
      decidedL1ToSeq: 20,
      dueSeq: 30,
      due: false,
    });
    expect(status.ok && status.status.settled).toBe(true);
    expect(decided.counts()).toEqual({ appendLookups: 0 });
  });

  it('shows a session stuck behind a refused turn, instead of answering as if all were well', async () => {
    const stalled = { expectedSeq: 26, since: '2026-12-04T09:00:00.000Z' };
    const stuck = create(world({ decidedThrough: 20, broken: { seq: 26, reason: 'seq_gap' }, stalled }));
    const status = await stuck.status('t', 's');
    expect(status.ok && status.status.broken).toEqual({ seq: 26, reason: 'seq_gap' });
    expect(status.ok && status.status.stalled).toEqual(stalled);
    const resumed = await stuck.resume('t', 's');
    expect(resumed.ok && resumed.result.broken).toEqual({ seq: 26, reason: 'seq_gap' });
    expect(resumed.ok && resumed.result.stalled).toEqual(stalled);
  });

  // Not a stale check, but the same in-memory client: the regression watch a resume leaves.
  it('leaves a regression watch only for a resume it serves to an agent', async () => {
    const recorded: [number, number][] = [];
    const watch = (plan: ResumePlan, resumedAtSeq: number) => {
      recorded.push([plan.rawFromSeq - 1, resumedAtSeq]);
      return Promise.resolve();
    };
    const served = world({ decidedThrough: 20 });
    const client = createResumeClientFrom({ ...clientDeps(served), watch });
    expect((await client.resume('t', 's')).ok).toBe(true);
    expect(recorded).toEqual([[20, 25]]);
    // A look (`tidemark inspect`) is not a resume.
    expect((await client.resume('t', 's', { watch: false })).ok).toBe(true);
    expect(recorded).toHaveLength(1);
    // A refused resume (turns.l0 short of the watermark) left the agent nothing to work from.
    const short = world({ decidedThrough: 20 });
    const refused = createResumeClientFrom({
      ...clientDeps(short),
      turns: { ...short.reader, read: () => Promise.resolve([]) },
      watch,
    });
    expect(await refused.resume('t', 's')).toMatchObject({ ok: false, code: 'l0_incomplete' });
    expect(recorded).toHaveLength(1);
    // A recorder that fails is logged, never the resume's failure.
    const { logger, warnings } = capture();
    const failing = createResumeClientFrom({
      ...clientDeps(served),
      logger,
      watch: () => Promise.reject(new Error('redis away')),
    });
    expect((await failing.resume('t', 's')).ok).toBe(true);
    expect(warnings().map((w) => w.msg)).toContain('regression watch not recorded');
  });
});

describe('the stale configuration', () => {
  it('reads STALE_AFTER_MS and the compactor’s policy variables the way the compactor does', () => {
    const defaults = parseConfig(resumeConfigSchema, {});
    expect(defaults.STALE_AFTER_MS).toBe(30_000);
    expect(policiesOf(defaults).base.l1EveryTurns).toBe(40);
    const config = parseConfig(resumeConfigSchema, {
      STALE_AFTER_MS: '500',
      L1_EVERY_TURNS: '20',
      POLICY_OVERRIDES: JSON.stringify({ 't/s1': { l1EveryTurns: 5 }, t: { summarizer: 'narrative' } }),
    });
    expect(config.STALE_AFTER_MS).toBe(500);
    const { policyFor } = policiesOf(config);
    expect(policyFor({ tenantId: 't', sessionId: 's1' }).l1EveryTurns).toBe(5);
    expect(policyFor({ tenantId: 't', sessionId: 's2' })).toEqual(
      definePolicy({ l1EveryTurns: 20, summarizer: 'narrative' }),
    );
    expect(policyFor({ tenantId: 'u', sessionId: 's1' }).l1EveryTurns).toBe(20);
  });

  it('fails fast naming the variable', () => {
    expect(() => parseConfig(resumeConfigSchema, { STALE_AFTER_MS: 'soon' })).toThrow(/STALE_AFTER_MS/);
    expect(() => parseConfig(resumeConfigSchema, { POLICY_OVERRIDES: '[1]' })).toThrow(/POLICY_OVERRIDES/);
    expect(() => parseConfig(resumeConfigSchema, { POLICY_OVERRIDES: '{"t":3}' })).toThrow(
      /POLICY_OVERRIDES/,
    );
    expect(() =>
      policiesOf(parseConfig(resumeConfigSchema, { POLICY_OVERRIDES: '{"t":{"l1EveryTurns":0}}' })),
    ).toThrow(/POLICY_OVERRIDES: t: policy.l1EveryTurns/);
  });
});
