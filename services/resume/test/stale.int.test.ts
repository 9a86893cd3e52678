import { definePolicy, generateSession } from '@tidemark/core';
import { describe, expect, it, vi } from 'vitest';
import { createWorld, getResume, getStatus, sessionInWorld, tokens, waitForResume } from './fixture.js';

// "Stale is visible", against the real Kafka, registry and Redis: turns published to turns.l0 and
// materialized, the reference's compactions and only some of its decisions published (a compactor or
// validator stuck for the session), the resume service run with a small STALE_AFTER_MS.

const tenantId = 'tenant-a';
const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 4 });
const policyConfig = { L1_EVERY_TURNS: 10 };

const staleSessionsOf = async (metrics: Promise<string>) =>
  Number(/^tidemark_resume_stale_sessions (\d+)$/m.exec(await metrics)?.[1]);

describe('stale resumes against the real stack', () => {
  it('answers stale (resume and status) while the L1 due at #20 is undecided past STALE_AFTER_MS, and null once it is decided', async () => {
    const world = await createWorld();
    const sessionId = 'stuck-1';
    const turns = generateSession(12, { tenantId, sessionId, turns: 25 });
    const publishedFrom = Date.now();
    const { run } = await sessionInWorld(world, turns, policy);
    const publishedTo = Date.now();
    // The pipeline decided the L1 at #10, then stopped: the L1 at #20 is due and has no decision.
    await world.publishCompactions(run.compactions);
    const decided = run.decisions.filter((d) => d.toSeq <= 10);
    const missing = run.decisions.filter((d) => d.toSeq > 10);
    expect(missing.map((d) => [d.depth, d.toSeq])).toEqual([[1, 20]]);
    await world.publishDecisions(decided);

    const strict = await world.startService({ config: { ...policyConfig, STALE_AFTER_MS: 1_000 } });
    // A second instance (API only) whose bound has not passed: the same context, not stale.
    const patient = await world.startService({
      worker: false,
      config: { ...policyConfig, STALE_AFTER_MS: 600_000 },
    });

    const stale = await waitForResume(strict.url, tenantId, sessionId, (b) => b.stale !== null);
    expect(stale).toMatchObject({
      mode: 'digest',
      rawFromSeq: 11,
      rawToSeq: 25,
      stale: { reason: 'compaction_overdue', since: expect.any(String) as unknown },
    });
    // Since when: turn #20's append to turns.l0 (not the runtime's timestamp on the turn, months old).
    const since = Date.parse((stale.stale as { since: string }).since);
    expect(since).toBeGreaterThanOrEqual(publishedFrom);
    expect(since).toBeLessThanOrEqual(publishedTo);
    expect(since).not.toBe(turns[19]!.timestamp);
    const notYet = await getResume(patient.url, tenantId, sessionId);
    expect(notYet.status).toBe(200);
    expect(notYet.body.stale).toBeNull();
    expect(notYet.body.contextHash).toBe(stale.contextHash);
    // The library answers the same.
    const library = await strict.service.client.resume(tenantId, sessionId);
    expect(library.ok && library.result.stale).toEqual(stale.stale);

    const status = await getStatus(strict.url, tenantId, sessionId);
    expect(status.status).toBe(200);
    expect(status.body).toEqual({
      tenantId,
      sessionId,
      plan: {
        mode: 'digest',
        reason: null,
        markerId: stale.markerId,
        nodeId: stale.nodeId,
        frame: stale.frame,
        rawFromSeq: 11,
      },
      appliedSeq: 25,
      // The L1 at #20 is compacted, not decided: the status tells the two apart.
      lastCompactedSeq: 20,
      broken: null,
      stalled: null,
      compaction: { l1EveryTurns: 10, decidedL1ToSeq: 10, dueSeq: 20, due: true },
      stale: stale.stale,
      settled: false,
    });
    const patientStatus = await getStatus(patient.url, tenantId, sessionId);
    expect(patientStatus.body).toMatchObject({ compaction: { dueSeq: 20, due: true }, stale: null });
    expect(await staleSessionsOf(strict.host.metrics.metrics())).toBe(1);
    expect(await staleSessionsOf(patient.host.metrics.metrics())).toBe(0);

    // The validator catches up: the L1 at #20 is decided, the next one (#30) is not due.
    await world.publishDecisions(missing);
    const fresh = await waitForResume(strict.url, tenantId, sessionId, (b) => b.rawFromSeq === 21);
    expect(fresh.stale).toBeNull();
    const after = await getStatus(strict.url, tenantId, sessionId);
    expect(after.body).toMatchObject({
      plan: { mode: 'digest', rawFromSeq: 21 },
      compaction: { decidedL1ToSeq: 20, dueSeq: 30, due: false },
      settled: true,
      stale: null,
    });
    expect(await staleSessionsOf(strict.host.metrics.metrics())).toBe(0);
  });

  it('answers stale: null for a decided session and stale on status for one with no decision at all, under the resume route’s auth rules', async () => {
    const world = await createWorld();
    // Fully decided: L1s at #10 and #20, 25 turns (the next L1, at #30, is not due).
    const decidedTurns = generateSession(13, { tenantId, sessionId: 'decided-1', turns: 25 });
    const { run } = await sessionInWorld(world, decidedTurns, policy);
    await world.publishCompactions(run.compactions);
    await world.publishDecisions(run.decisions);
    // 12 turns and no decision: the first L1 (#10) is due, there is no plan.
    await world.publishTurns(generateSession(14, { tenantId, sessionId: 'undecided-1', turns: 12 }));
    const { url } = await world.startService({ config: { ...policyConfig, STALE_AFTER_MS: 1_000 } });

    const decided = await waitForResume(url, tenantId, 'decided-1', (b) => b.rawFromSeq === 21);
    expect(decided.stale).toBeNull();
    const decidedStatus = await getStatus(url, tenantId, 'decided-1');
    expect(decidedStatus.status).toBe(200);
    expect(decidedStatus.body).toMatchObject({
      plan: { mode: 'digest', rawFromSeq: 21 },
      appliedSeq: 25,
      compaction: { l1EveryTurns: 10, decidedL1ToSeq: 20, dueSeq: 30, due: false },
      stale: null,
    });

    // The resume of the undecided session is refused (no plan); its status says why it is overdue.
    expect((await getResume(url, tenantId, 'undecided-1')).body.code).toBe('no_plan');
    const undecided = await vi.waitFor(
      async () => {
        const response = await getStatus(url, tenantId, 'undecided-1');
        expect(response.body.stale).not.toBeNull();
        return response;
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(undecided.status).toBe(200);
    expect(undecided.body).toMatchObject({
      plan: null,
      appliedSeq: 12,
      compaction: { l1EveryTurns: 10, decidedL1ToSeq: 0, dueSeq: 10, due: true },
      stale: { reason: 'compaction_overdue' },
    });

    // The same auth rules as resume: 401, 403 before any lookup, 404 for an unknown or other tenant's id.
    expect((await getStatus(url, tenantId, 'decided-1', null)).status).toBe(401);
    expect((await getStatus(url, tenantId, 'decided-1', 'not-a-token')).status).toBe(401);
    const forbidden = await getStatus(url, tenantId, 'decided-1', tokens.b);
    const forbiddenUnknown = await getStatus(url, tenantId, 'no-such-session', tokens.b);
    expect([forbidden.status, forbiddenUnknown.status]).toEqual([403, 403]);
    expect(forbidden.body).toEqual(forbiddenUnknown.body);
    const crossed = await getStatus(url, 'tenant-b', 'decided-1', tokens.b);
    const unknown = await getStatus(url, 'tenant-b', 'no-such-session', tokens.b);
    expect([crossed.status, unknown.status]).toEqual([404, 404]);
    expect(crossed.body).toEqual(unknown.body);
    expect(crossed.text).not.toContain('decided-1');
    expect((await getStatus(url, tenantId, 'no-such-session')).status).toBe(404);

    const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: object };
    expect(Object.keys(openapi.paths)).toContain('/v1/sessions/{tenantId}/{sessionId}/status');
  });
});
