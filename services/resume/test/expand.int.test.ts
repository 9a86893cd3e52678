import { definePolicy, generateSession, rawTurnText } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { createWorld, sessionInWorld, tokens, waitForResume } from './fixture.js';

// Expand, against the real stack: a node of a session's summary opened by id (its claims, each with the
// L0 seq it came from), and the raw turns it covers read from turns.l0 a page at a time, in any resume
// output format; the same tenant rule as a resume, and a range outside the node refused with its span.

const tenantId = 'tenant-a';

async function get(url: string, path: string, token: string = tokens.a) {
  const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('expanding a node of a session', () => {
  it('returns the node with its claims, and the raw turns it covers, paged, in any format; refuses a range outside it', async () => {
    const world = await createWorld();
    const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 4 });
    const turns = generateSession(23, { tenantId, sessionId: 'expand-1', turns: 47 });
    // Another session's turns in between: the reads skip them.
    const noise = generateSession(24, { tenantId, sessionId: 'noise', turns: 60 });
    const { run } = await sessionInWorld(world, turns, policy, { interleave: noise });
    await world.publishCompactions(run.compactions);
    await world.publishDecisions(run.decisions);
    const { url } = await world.startService({ config: { RESUME_CONTEXT_CACHE_BYTES: 0 } });
    const resumed = await waitForResume(url, tenantId, 'expand-1', (b) => b.nodeId !== null);
    const nodeId = resumed.nodeId as string;
    const node = run.compactions.find((c) => c.compactionId === nodeId)!;
    expect(node.tier).toBe(2);
    const base = `/v1/sessions/${tenantId}/expand-1/nodes/${nodeId}`;

    // The node itself: what the resume summarised, each claim with its seq.
    const opened = await get(url, base);
    expect(opened.status).toBe(200);
    expect(opened.body).toEqual({ node: JSON.parse(JSON.stringify(node)) as unknown });

    // Its turns, the first page (limit 15) and the next, as resume messages.
    const asMessages = (from: number, to: number) =>
      turns
        .filter((t) => t.seq >= from && t.seq <= to)
        .map((t) => ({ role: t.role, content: rawTurnText(t) }));
    const first = await get(url, `${base}/turns?limit=15`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ nodeId, fromSeq: 1, toSeq: 15, nextFromSeq: 16 });
    expect(first.body.messages).toEqual(asMessages(1, 15));
    const second = await get(url, `${base}/turns?fromSeq=16&toSeq=40&limit=100`);
    expect(second.body).toMatchObject({ fromSeq: 16, toSeq: 40, nextFromSeq: null });
    expect(second.body.messages).toEqual(asMessages(16, 40));

    // In a provider's format: that provider's body instead of the messages.
    const anthropic = await get(url, `${base}/turns?fromSeq=11&toSeq=20&format=anthropic`);
    expect(anthropic.status).toBe(200);
    expect(anthropic.body).toMatchObject({ format: 'anthropic', fromSeq: 11, toSeq: 20 });
    expect(anthropic.body.messages).toBeUndefined();
    expect(anthropic.body.body).toBeDefined();

    // Outside the node: 400, naming the node's span.
    const outside = await get(url, `${base}/turns?fromSeq=35&toSeq=45`);
    expect(outside.status).toBe(400);
    expect(outside.body).toEqual({
      code: 'bad_request',
      message: 'the node covers turns 1–40; ask for a range inside it',
    });
    expect((await get(url, `${base}/turns?fromSeq=x`)).status).toBe(400);
    // Another tenant's token: 403 before anything is looked up; an unknown node: 404.
    expect((await get(url, base, tokens.b)).status).toBe(403);
    const unknown = await get(url, `/v1/sessions/${tenantId}/expand-1/nodes/${'0'.repeat(64)}`);
    expect(unknown).toEqual({
      status: 404,
      body: { code: 'node_not_found', message: 'no such node in this session' },
    });
  });
});
