import type { TidemarkClient } from '@tidemark/client';
import { generateSession, rawTurnText } from '@tidemark/core';
import { hashToken } from '@tidemark/resume';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, e2ePipeline, runTidemark } from './pipeline.js';

// Expand through the installable client and the `tidemark expand` command, on the whole pipeline: the
// node a resume starts from, opened by its id, and the raw turns it covers, a page at a time.

const tenantId = 'expand';
const token = 'expand-token';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let client: TidemarkClient;
beforeAll(async () => {
  e2e = await e2ePipeline([], { L1_EVERY_TURNS: '5', RESUME_TOKENS: `${tenantId}:${hashToken(token)}` });
  client = await connectClient(e2e, tenantId, token);
}, 120_000);
afterAll(async () => {
  await client?.close();
  await e2e?.stop();
});

const tidemark = (args: readonly string[]) => runTidemark(e2e, args);

describe('expand, from the client and the command line', () => {
  it('opens the node a resume starts from, and pages through the turns it covers', async () => {
    const sessionId = 'opened';
    const turns = generateSession(51, { tenantId, sessionId, turns: 12, activity: 0.4 });
    await client.publish(turns);
    await client.waitUntilSettled(sessionId, 12, 60_000);
    const { nodeId } = await client.resume(sessionId);
    expect(nodeId).not.toBeNull();

    const { node } = await client.node(sessionId, nodeId!);
    const span = node.span as { fromSeq: number; toSeq: number };
    expect(node.compactionId).toBe(nodeId);
    const first = await client.nodeTurns(sessionId, nodeId!, { limit: 3 });
    expect(first).toMatchObject({
      fromSeq: span.fromSeq,
      toSeq: span.fromSeq + 2,
      nextFromSeq: span.fromSeq + 3,
    });
    const rest = await client.nodeTurns(sessionId, nodeId!, { fromSeq: first.nextFromSeq! });
    expect(rest).toMatchObject({ toSeq: span.toSeq, nextFromSeq: null });
    expect([...first.messages!, ...rest.messages!].map((m) => m.content)).toEqual(
      turns.filter((t) => t.seq >= span.fromSeq && t.seq <= span.toSeq).map(rawTurnText),
    );
    await expect(client.nodeTurns(sessionId, nodeId!, { toSeq: 999 })).rejects.toThrow(
      `400 bad_request the node covers turns ${span.fromSeq}–${span.toSeq}`,
    );

    // The command line: the node as JSON, then a page of its turns in a provider's format.
    const opened = await tidemark(['expand', `${tenantId}/${sessionId}`, nodeId!]);
    expect(opened.code, opened.stderr).toBe(0);
    expect(JSON.parse(opened.stdout)).toEqual({ node });
    const page = await tidemark([
      'expand',
      `${tenantId}/${sessionId}`,
      nodeId!,
      '--turns',
      '--limit',
      '2',
      '--format',
      'openai-chat',
    ]);
    expect(page.code, page.stderr).toBe(0);
    expect(JSON.parse(page.stdout)).toMatchObject({
      format: 'openai-chat',
      fromSeq: span.fromSeq,
      toSeq: span.fromSeq + 1,
    });
    const unknown = await tidemark(['expand', `${tenantId}/${sessionId}`, 'no-such-node']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^cannot expand no-such-node of expand\/opened: node_not_found: /);
  }, 120_000);
});
