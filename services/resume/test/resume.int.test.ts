import { definePolicy, generateSession, trustedMarkers, rawTurnText } from '@tidemark/core';
import { describe, expect, it, vi } from 'vitest';
import { createWorld, expectedContext, getResume, sessionInWorld, tokens, waitForResume } from './fixture.js';

const tenantId = 'tenant-a';

describe('the resume service against the real stack', () => {
  it('resumes a valid marker in digest mode with exactly the raw turns after its boundary, one contextHash from 100 resumes, two instances and a restart', async () => {
    const world = await createWorld();
    // L1 every 10 turns, L2 over 4: the frame is the L2 at #40; turns 41..47 follow it.
    const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 4 });
    const turns = generateSession(21, { tenantId, sessionId: 'digest-1', turns: 47 });
    // Another session's turns interleaved in the same partition: the raw read must skip them.
    const noise = generateSession(22, { tenantId, sessionId: 'noise', turns: 60 });
    const { run, positions } = await sessionInWorld(world, turns, policy, { interleave: noise });
    expect(positions.get(47)!.offset - positions.get(41)!.offset).toBe(12); // noise #42 sits before #42, and so on
    const expected = expectedContext(run, turns, positions.get(1)!.partition);
    expect(expected.plan.mode).toBe('digest');
    await world.publishCompactions(run.compactions);
    await world.publishDecisions(run.decisions);

    // No context cache: every resume below reads the plan, the node and turns.l0 and builds again.
    const uncached = { RESUME_CONTEXT_CACHE_BYTES: 0 };
    const one = await world.startService({ config: uncached });
    const body = await waitForResume(
      one.url,
      tenantId,
      'digest-1',
      (b) => b.contextHash === expected.contextHash,
    );
    expect(body).toMatchObject({ mode: 'digest', rawFromSeq: 41, rawToSeq: 47, reason: null });
    const messages = body.messages as { role: string; content: string }[];
    const node = run.compactions.find((c) => c.compactionId === body.nodeId)!;
    expect(node.tier).toBe(2);
    expect(messages[0]!.role).toBe('system');
    expect(messages[0]!.content).toContain(node.narrative);
    expect(messages.slice(1)).toEqual(
      turns.filter((t) => t.seq > 40).map((t) => ({ role: t.role, content: rawTurnText(t) })),
    );

    // 100 resumes, from the library and over HTTP, and from a second instance (API only).
    const two = await world.startService({ worker: false, config: uncached });
    const hashes = new Set<string>();
    for (let i = 0; i < 50; i += 1) {
      const outcome = await one.service.client.resume(tenantId, 'digest-1');
      if (!outcome.ok) throw new Error(outcome.code);
      hashes.add(outcome.result.contextHash);
      hashes.add((await getResume(two.url, tenantId, 'digest-1')).body.contextHash as string);
    }
    // After a restart: a new instance, same group, reading the plans the first one stored.
    await one.host.close();
    const three = await world.startService();
    for (let i = 0; i < 3; i += 1) {
      // With the context cache (the default): built once, then served from memory, the same bytes.
      const again = await getResume(three.url, tenantId, 'digest-1');
      hashes.add(again.body.contextHash as string);
    }
    expect([...hashes]).toEqual([expected.contextHash]);
    const metrics = await three.host.metrics.metrics();
    expect(metrics).toMatch(/tidemark_resume_requests_total\{mode="digest",outcome="ok"\} 3/);
    expect(metrics).toMatch(/tidemark_resume_context_cache_total\{result="hit"\} 2/);
    expect(metrics).toMatch(/tidemark_resume_consumer_lag \d+/);
    expect(metrics).not.toMatch(/tidemark_resume_divergence_checks_total\{result="mismatch"\}/);

    // Traffic after the session's last turn in its partition: a resume reads up to the watermark's turn
    // and asks for about that much, so it does not fetch (and decode) the 400 records after it.
    await world.publishTurns(generateSession(23, { tenantId, sessionId: 'later', turns: 400 }));
    const fetched = async () =>
      Number(/tidemark_resume_l0_records_fetched_total (\d+)/.exec(await two.host.metrics.metrics())?.[1]);
    const before = await fetched();
    for (let i = 0; i < 10; i += 1) {
      expect((await getResume(two.url, tenantId, 'digest-1')).body.contextHash).toBe(expected.contextHash);
    }
    const perResume = ((await fetched()) - before) / 10;
    expect(
      perResume,
      'records fetched per resume (the partition holds 107, then 400 more)',
    ).toBeGreaterThanOrEqual(7);
    expect(perResume).toBeLessThan(200);
  });

  it('resumes a session whose newest marker is invalid in raw mode from the right checkpoint, with no part of the distrusted node', async () => {
    const world = await createWorld();
    // The narrative summarizer drops what is in flight; without repairs the newest marker fails while
    // an earlier one passed. Pick a seed where that is the final state.
    const policy = definePolicy({ summarizer: 'narrative', l1EveryTurns: 8, digestFanIn: 10 });
    const sessionId = 'raw-1';
    let chosen: ReturnType<typeof generateSession> | null = null;
    for (let seed = 1; seed < 200 && chosen === null; seed += 1) {
      const turns = generateSession(seed, { tenantId, sessionId, turns: 45 });
      const { runReference } = await import('@tidemark/core');
      const probe = runReference(turns, { policy, maxRepairs: 0 });
      const plan = expectedContext(probe, turns, 0).plan;
      if (plan.mode === 'raw' && plan.reason === 'newest_invalid' && plan.checkpoint.compactionId !== null)
        chosen = turns;
    }
    expect(chosen).not.toBeNull();
    const turns = chosen!;
    const { run, positions } = await sessionInWorld(world, turns, policy, { maxRepairs: 0 });
    const expected = expectedContext(run, turns, positions.get(1)!.partition);
    const plan = expected.plan;
    if (plan.mode !== 'raw') throw new Error('expected a raw plan');
    // The newest marker at the frame's depth, by its latest decision: invalid, and not trusted.
    const latest = new Map(run.decisions.map((d) => [d.markerId, d]));
    const distrusted = [...latest.values()]
      .filter((d) => d.depth === run.frame!.depth)
      .sort((x, y) => x.toSeq - y.toSeq)
      .at(-1)!;
    expect(distrusted.type).toBe('marker_invalid');
    expect(trustedMarkers(run.state).map((m) => m.markerId)).not.toContain(distrusted.markerId);
    const distrustedNode = run.compactions.find((c) => c.compactionId === distrusted.compactionId)!;
    await world.publishCompactions(run.compactions);
    await world.publishDecisions(run.decisions);

    const { url } = await world.startService();
    const body = await waitForResume(url, tenantId, sessionId, (b) => b.contextHash === expected.contextHash);
    expect(body).toMatchObject({
      mode: 'raw',
      reason: 'newest_invalid',
      markerId: plan.checkpoint.markerId,
      nodeId: plan.checkpoint.compactionId,
      rawFromSeq: plan.checkpoint.toSeq + 1,
      rawToSeq: 45,
    });
    const text = JSON.stringify(body.messages);
    expect(text).not.toContain(distrustedNode.narrative);
    expect(text).not.toContain(distrustedNode.compactionId);
    const messages = body.messages as { role: string; content: string }[];
    expect(messages.slice(1).map((m) => m.content)).toEqual(
      turns.filter((t) => t.seq > plan.checkpoint.toSeq).map(rawTurnText),
    );
  });

  it('moves the plan off markers a later depth change invalidated', async () => {
    const world = await createWorld();
    const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 2 });
    const sessionId = 'depth-1';
    const turns = generateSession(5, { tenantId, sessionId, turns: 25 });
    const { run, positions } = await sessionInWorld(world, turns, policy);
    const firstChange = run.decisions.findIndex(
      (d) => d.type === 'marker_invalid' && d.cause === 'depth_change',
    );
    expect(firstChange).toBeGreaterThan(0);
    await world.publishCompactions(run.compactions);
    await world.publishDecisions(run.decisions.slice(0, firstChange));
    const { url } = await world.startService();
    const before = await waitForResume(url, tenantId, sessionId, (b) => b.mode === 'digest');
    expect(before).toMatchObject({ frame: { depth: 1 }, rawFromSeq: 21 });
    const l1Marker = before.markerId;

    // The depth change's invalidations alone: the L1 marker is no longer trusted, nothing at depth 2 yet.
    const invalidations = run.decisions
      .slice(firstChange)
      .filter((d) => d.type === 'marker_invalid' && d.cause === 'depth_change');
    await world.publishDecisions(invalidations);
    const raw = await waitForResume(url, tenantId, sessionId, (b) => b.mode === 'raw');
    expect(raw).toMatchObject({
      reason: 'newest_invalid',
      markerId: null,
      nodeId: null,
      rawFromSeq: 1,
      rawToSeq: 25,
    });
    expect((raw.messages as unknown[]).length).toBe(25);

    // Then the L2 node's own decision: digest at depth 2.
    await world.publishDecisions(run.decisions.slice(firstChange).filter((d) => !invalidations.includes(d)));
    const expected = expectedContext(run, turns, positions.get(1)!.partition);
    const after = await waitForResume(
      url,
      tenantId,
      sessionId,
      (b) => b.contextHash === expected.contextHash,
    );
    expect(after).toMatchObject({ mode: 'digest', frame: { depth: 2 }, rawFromSeq: 21 });
    expect(after.markerId).not.toBe(l1Marker);
  });

  it('rebuilds the plans from the topics when Redis loses them, and serves the same context again', async () => {
    const world = await createWorld();
    const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 4 });
    const sessionId = 'lost-1';
    const turns = generateSession(33, { tenantId, sessionId, turns: 27 });
    const { run, positions } = await sessionInWorld(world, turns, policy);
    await world.publishCompactions(run.compactions);
    await world.publishDecisions(run.decisions);
    const expected = expectedContext(run, turns, positions.get(1)!.partition);
    // Two workers in the same groups: one rebuilds (the lock's holder), the other waits for it.
    const options = { config: { RESUME_CONTEXT_CACHE_BYTES: 0, RESUME_EPOCH_CHECK_MS: 100 } };
    const { url } = await world.startService(options);
    const second = await world.startService(options);
    await waitForResume(url, tenantId, sessionId, (b) => b.contextHash === expected.contextHash);

    // Redis loses the resume store (plans, nodes and its epoch); the projection survives here.
    const keys = await world.redis.keys(`${world.prefix}resume*`);
    expect(keys.length).toBeGreaterThan(2);
    await world.redis.del(...keys);
    const during = await getResume(url, tenantId, sessionId);
    expect([409, 503]).toContain(during.status);
    const after = await waitForResume(
      url,
      tenantId,
      sessionId,
      (b) => b.contextHash === expected.contextHash,
    );
    expect(after.mode).toBe('digest');
    await waitForResume(second.url, tenantId, sessionId, (b) => b.contextHash === expected.contextHash);
    expect(await world.redis.exists(`${world.prefix}resume:epoch:4`)).toBe(1);
    await vi.waitFor(() => expect(second.service.state).toBe('ready'), { timeout: 30_000 });
  });

  it('lets the plans of sessions idle past STATE_RETENTION_MS expire, and rebuilds them from the topics on the next resume or decision', async () => {
    const world = await createWorld();
    const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 4 });
    const read = generateSession(34, { tenantId, sessionId: 'idle-read', turns: 27 });
    const decided = generateSession(35, { tenantId, sessionId: 'idle-decided', turns: 27 });
    const a = await sessionInWorld(world, read, policy);
    const b = await sessionInWorld(world, decided, policy);
    await world.publishCompactions([...a.run.compactions, ...b.run.compactions]);
    const half = Math.floor(b.run.decisions.length / 2);
    await world.publishDecisions([...a.run.decisions, ...b.run.decisions.slice(0, half)]);
    const { url, host } = await world.startService({
      config: { RESUME_CONTEXT_CACHE_BYTES: 0, STATE_RETENTION_MS: 1500 },
    });
    const expectedA = expectedContext(a.run, read, a.positions.get(1)!.partition);
    await waitForResume(url, tenantId, 'idle-read', (body) => body.contextHash === expectedA.contextHash);
    await vi.waitFor(async () => expect((await getResume(url, tenantId, 'idle-decided')).status).toBe(200), {
      timeout: 30_000,
    });

    // Idle past the retention: plans and nodes expire; the sessions' seen marks stay.
    const stateKeys = async () => [
      ...(await world.redis.keys(`${world.prefix}resume:{*`)),
      ...(await world.redis.keys(`${world.prefix}resume-nodes:{*`)),
    ];
    expect(await stateKeys()).toHaveLength(4);
    await vi.waitFor(async () => expect(await stateKeys()).toEqual([]), { timeout: 15_000, interval: 100 });
    expect(await world.redis.keys(`${world.prefix}resume-seen:{*`)).toHaveLength(2);

    // A resume rebuilds the plan on the spot: the same context, at the first ask.
    const again = await getResume(url, tenantId, 'idle-read');
    expect(again.status).toBe(200);
    expect(again.body.contextHash).toBe(expectedA.contextHash);
    // A decision for an expired session: the worker rebuilds the plan, then applies it.
    await world.publishDecisions(b.run.decisions.slice(half));
    const expectedB = expectedContext(b.run, decided, b.positions.get(1)!.partition);
    await waitForResume(url, tenantId, 'idle-decided', (body) => body.contextHash === expectedB.contextHash);
    // Counted once the batch that found it expired is through (the resume may see the plan before).
    const restored = async () =>
      (await host.metrics.getSingleMetric('tidemark_resume_restored_sessions_total')?.get())?.values[0]
        ?.value;
    await vi.waitFor(async () => expect(await restored()).toBe(1), { timeout: 10_000 });
  });

  it('answers 401, 403, 404 and 409 with a code and never another tenant’s session id; a valid token reads', async () => {
    const world = await createWorld();
    const policy = definePolicy({ l1EveryTurns: 10 });
    const secret = 'a-secret-session-of-tenant-a';
    const turns = generateSession(8, { tenantId, sessionId: secret, turns: 12 });
    const { run } = await sessionInWorld(world, turns, policy);
    await world.publishCompactions(run.compactions);
    await world.publishDecisions(run.decisions);
    // A session with turns and no decision yet.
    await world.publishTurns(generateSession(9, { tenantId, sessionId: 'undecided', turns: 3 }));
    const { url } = await world.startService();

    const valid = await waitForResume(url, tenantId, secret, (b) => b.mode === 'digest');
    expect(valid.sessionId).toBe(secret);

    const missing = await getResume(url, tenantId, secret, null);
    expect(missing.status).toBe(401);
    expect(missing.body.code).toBe('unauthorized');
    const bad = await getResume(url, tenantId, secret, 'not-a-token');
    expect(bad.status).toBe(401);

    // Tenant B's token on tenant A's path: 403, whether or not the session exists.
    const forbidden = await getResume(url, tenantId, secret, tokens.b);
    const forbiddenUnknown = await getResume(url, tenantId, 'no-such-session', tokens.b);
    expect([forbidden.status, forbiddenUnknown.status]).toEqual([403, 403]);
    expect(forbidden.body).toEqual(forbiddenUnknown.body);
    // Tenant B's token on its own path with tenant A's session id: 404, like any unknown session.
    const crossed = await getResume(url, 'tenant-b', secret, tokens.b);
    const unknown = await getResume(url, 'tenant-b', 'no-such-session', tokens.b);
    expect([crossed.status, unknown.status]).toEqual([404, 404]);
    expect(crossed.body).toEqual(unknown.body);
    expect(crossed.body.code).toBe('session_not_found');
    for (const response of [missing, bad, forbidden, forbiddenUnknown, crossed, unknown]) {
      expect(response.text).not.toContain(secret);
      expect(Object.keys(response.body).sort()).toEqual(['code', 'message']);
    }

    const notFound = await getResume(url, tenantId, 'no-such-session');
    expect(notFound.status).toBe(404);
    const noPlan = await getResume(url, tenantId, 'undecided');
    expect(noPlan.status).toBe(409);
    expect(noPlan.body.code).toBe('no_plan');

    const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as { openapi: string; paths: object };
    expect(openapi.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.paths)).toContain('/v1/sessions/{tenantId}/{sessionId}/resume');
  });
});
