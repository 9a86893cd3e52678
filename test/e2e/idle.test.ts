import type { TidemarkClient } from '@tidemark/client';
import { generateSession } from '@tidemark/core';
import { hashToken } from '@tidemark/resume';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectClient, e2ePipeline, resumeText } from './pipeline.js';

// Bounded state, end to end: a session idle past STATE_RETENTION_MS loses its compactor window, its
// validator frame and its resume plan (the projection stays), and when it comes back every service
// rebuilds what it needs from the topics: the session goes on exactly as one that never paused. Real
// stack, the four services in one process, the real client.

const tenantId = 'idle';
const token = 'idle-token';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let client: TidemarkClient;
let redis: Redis;
beforeAll(async () => {
  e2e = await e2ePipeline([], {
    L1_EVERY_TURNS: '5',
    STATE_RETENTION_MS: '2000',
    RESUME_TOKENS: `${tenantId}:${hashToken(token)}`,
  });
  client = await connectClient(e2e, tenantId, token);
  redis = new Redis(e2e.env.REDIS_URL!);
}, 120_000);
afterAll(async () => {
  redis?.disconnect();
  await client?.close();
  await e2e?.stop();
});

describe('a session idle past the state retention', () => {
  it('has its window, frame and plan expire, and goes on, once resumed, exactly as a session that never paused', async () => {
    const sessionId = 'paused';
    const turns = generateSession(41, { tenantId, sessionId, turns: 24, activity: 0.4 });
    await client.publish(turns.slice(0, 13));
    await client.waitUntilSettled(sessionId, 13, 60_000);
    const before = await client.resume(sessionId);
    expect(before.nodeId).not.toBeNull();

    // Idle: every service's state of the session expires; only the projection and the seen marks stay.
    const tag = `{${tenantId}/${sessionId}}`;
    const prefix = e2e.env.REDIS_PREFIX!;
    const derived = async () =>
      (await redis.keys(`${prefix}*${tag}*`)).filter(
        (key) => !key.startsWith(`${prefix}proj:`) && !/-seen:|resume-ctx:/.test(key),
      );
    expect((await derived()).length).toBeGreaterThanOrEqual(5);
    await vi.waitFor(async () => expect(await derived()).toEqual([]), { timeout: 20_000, interval: 200 });

    // Read while expired: the plan is rebuilt on the spot, the same resume.
    expect(await client.resume(sessionId)).toEqual(before);

    await client.publish(turns.slice(13));
    await client.waitUntilSettled(sessionId, 24, 60_000);
    const control = generateSession(41, { tenantId, sessionId: 'unpaused', turns: 24, activity: 0.4 });
    await client.publish(control);
    await client.waitUntilSettled('unpaused', 24, 60_000);
    const resumed = await client.resume(sessionId);
    const unpaused = await client.resume('unpaused');
    expect(resumed).toMatchObject({ mode: unpaused.mode, stalled: null, broken: null });
    expect(resumed.nodeId === null).toBe(unpaused.nodeId === null);
    expect(resumeText(resumed, 'unpaused', sessionId)).toBe(resumeText(unpaused, 'unpaused', sessionId));
  });
});
