import { connectTidemark, TidemarkClientError, type TidemarkClient } from '@tidemark/client';
import { generateSession } from '@tidemark/core';
import { hashToken } from '@tidemark/resume';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2ePipeline } from './pipeline.js';

// A session whose runtime lost a turn: the pipeline refuses what comes after the gap, says the session is
// stalled (the seq it waits for, since when) on its status and every resume, and a client waiting for it
// to settle hears so at once instead of timing out; once the runtime publishes the turn and what follows
// again, the session goes on by itself. Real stack, the four services in one process, the real client.

const tenantId = 'stalls';
const token = 'stall-token';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let client: TidemarkClient;
const connect = () =>
  connectTidemark({
    brokers: e2e.env.KAFKA_BROKERS!.split(','),
    registryUrl: e2e.env.SCHEMA_REGISTRY_URL!,
    topicPrefix: e2e.env.TOPIC_PREFIX ?? '',
    resumeUrl: e2e.pipeline.url,
    token,
    tenantId,
  });
beforeAll(async () => {
  e2e = await e2ePipeline([], { L1_EVERY_TURNS: '5', RESUME_TOKENS: `${tenantId}:${hashToken(token)}` });
  client = await connect();
}, 120_000);
afterAll(async () => {
  await client?.close();
  await e2e?.stop();
});

describe('a session with a missing turn', () => {
  it('is stalled, visibly, until the turn and what follows are published again; then it goes on', async () => {
    const sessionId = 'lost-turn';
    const turns = generateSession(31, { tenantId, sessionId, turns: 12, activity: 0.4 });
    await client.publish(turns.slice(0, 4));
    await client.waitUntilSettled(sessionId, 4, 60_000);
    // Turn 5 never makes it; 6..12 do, from a restarted runtime (a publisher refuses a gap in what it
    // sent itself; a new one starts from the first turn it is given).
    const restarted = await connect();
    await restarted.publish(turns.slice(5));
    await restarted.close();

    const stalled = await client.waitUntilSettled(sessionId, 12, 60_000).then(
      () => null,
      (error: unknown) => error,
    );
    expect(stalled).toBeInstanceOf(TidemarkClientError);
    expect((stalled as Error).message).toMatch(
      /is waiting for seq 5 \(seq_gap at seq 6\) since \d{4}-\d\d-\d\dT.*: publish it \(again\) and what follows/,
    );
    const state = await client.session(sessionId);
    expect(state).toMatchObject({
      appliedSeq: 4,
      broken: { seq: 6, reason: 'seq_gap' },
      stalled: { expectedSeq: 5 },
    });

    await client.publish(turns.slice(4));
    const settled = await client.waitUntilSettled(sessionId, 12, 60_000);
    expect(settled).toMatchObject({ appliedSeq: 12, stalled: null, broken: { seq: 6, reason: 'seq_gap' } });
    // Boundaries from the gap on stay unverifiable: the resume says so, and is no longer stalled.
    expect(await client.resume(sessionId)).toMatchObject({ stalled: null, broken: { seq: 6 } });
  });
});
