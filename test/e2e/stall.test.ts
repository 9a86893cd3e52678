import { TidemarkClientError, type TidemarkClient } from '@tidemark/client';
import { generateSession } from '@tidemark/core';
import { hashToken } from '@tidemark/resume';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, e2ePipeline, resumeText } from './pipeline.js';

// A session whose runtime lost a turn: the pipeline parks what comes after the gap, says the session is
// stalled (the seq it waits for, since when) on its status and every resume, and a client waiting for it
// to settle hears so at once instead of timing out; once the runtime publishes the lost turn alone, the
// session catches up by itself: the parked turns follow it, are compacted and decided like any, and
// nothing is broken. Real stack, the four services in one process, the real client.

const tenantId = 'stalls';
const token = 'stall-token';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let client: TidemarkClient;
const connect = () => connectClient(e2e, tenantId, token);
beforeAll(async () => {
  e2e = await e2ePipeline([], { L1_EVERY_TURNS: '5', RESUME_TOKENS: `${tenantId}:${hashToken(token)}` });
  client = await connect();
}, 120_000);
afterAll(async () => {
  await client?.close();
  await e2e?.stop();
});

describe('a session with a missing turn', () => {
  it('is stalled, visibly, until the lost turn alone is published again; then it catches up by itself', async () => {
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
      /is waiting for seq 5 since \d{4}-\d\d-\d\dT.*: publish it \(again\)$/,
    );
    const state = await client.session(sessionId);
    expect(state).toMatchObject({ appliedSeq: 4, broken: null, stalled: { expectedSeq: 5 } });

    // The client that sends it knows it is on its way, and waits for the session to catch up.
    const again = await connect();
    await again.publish([turns[4]!]);
    const settled = await again.waitUntilSettled(sessionId, 12, 60_000);
    await again.close();
    expect(settled).toMatchObject({ appliedSeq: 12, stalled: null, broken: null });
    // The whole session is compacted and decided as if no turn had been late: its resume is that of the
    // same turns published in order (under another session id).
    const inOrder = generateSession(31, { tenantId, sessionId: 'in-order', turns: 12, activity: 0.4 });
    await client.publish(inOrder);
    await client.waitUntilSettled('in-order', 12, 60_000);
    const resumed = await client.resume(sessionId);
    const control = await client.resume('in-order');
    expect(resumed).toMatchObject({ stalled: null, broken: null, mode: control.mode });
    expect(resumed.nodeId === null).toBe(control.nodeId === null);
    expect(resumeText(resumed, 'in-order', sessionId)).toBe(resumeText(control, 'in-order', sessionId));
  });
});
