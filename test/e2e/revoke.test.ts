import type { TidemarkClient } from '@tidemark/client';
import { generateSession } from '@tidemark/core';
import { hashToken } from '@tidemark/resume';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, e2ePipeline, runTidemark } from './pipeline.js';

// Undo a compaction on the whole pipeline: an operator revokes the marker a session resumes from; the
// validator publishes a MarkerInvalid with cause revoked, the resume falls back to the raw checkpoint,
// a second revocation is the same one, and only an operator token of the session's tenant may ask.

const tenantId = 'undo';
const resumeToken = 'undo-resume-token';
const operatorToken = 'undo-operator-token';
const otherOperator = 'other-operator-token';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let client: TidemarkClient;
beforeAll(async () => {
  e2e = await e2ePipeline([], {
    L1_EVERY_TURNS: '5',
    RESUME_TOKENS: `${tenantId}:${hashToken(resumeToken)}`,
    OPERATOR_TOKENS: `${tenantId}:${hashToken(operatorToken)},other:${hashToken(otherOperator)}`,
  });
  client = await connectClient(e2e, tenantId, resumeToken);
}, 120_000);
afterAll(async () => {
  await client?.close();
  await e2e?.stop();
});

const tidemark = (args: readonly string[], extra: Record<string, string> = {}) =>
  runTidemark(e2e, args, extra);

async function call(
  method: 'GET' | 'POST',
  path: string,
  token: string | null,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${e2e.pipeline.url}${path}`, {
    method,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A settled session of the tenant that resumes in digest mode, and the marker it resumes from. */
async function digestSession(sessionId: string, seed: number): Promise<string> {
  const turns = generateSession(seed, { tenantId, sessionId, turns: 12, activity: 0.4 });
  await client.publish(turns);
  await client.waitUntilSettled(sessionId, 12, 60_000);
  const resumed = await call('GET', `/v1/sessions/${tenantId}/${sessionId}/resume`, resumeToken);
  expect(resumed.body).toMatchObject({ mode: 'digest' });
  return resumed.body.markerId as string;
}

describe('revoking a marker', () => {
  it('falls the session back to its raw checkpoint through a MarkerInvalid with cause revoked, once', async () => {
    const sessionId = 'revoked-by-api';
    const markerId = await digestSession(sessionId, 61);
    const revoke = `/v1/sessions/${tenantId}/${sessionId}/markers/${markerId}/revoke`;
    const reason = { reason: 'the digest dropped the rollback plan' };

    // Only an operator token of the session's tenant, with a reason, on a marker the session trusts.
    expect((await call('POST', revoke, null, reason)).status).toBe(401);
    expect(await call('POST', revoke, resumeToken, reason)).toMatchObject({
      status: 403,
      body: { code: 'forbidden', message: 'revoking needs an operator token, not a resume token' },
    });
    expect((await call('POST', revoke, otherOperator, reason)).status).toBe(403);
    expect((await call('POST', revoke, operatorToken, {})).status).toBe(400);
    expect((await call('POST', revoke, operatorToken, { reason: '  ' })).status).toBe(400);
    expect(
      (
        await call(
          'POST',
          `/v1/sessions/${tenantId}/${sessionId}/markers/not-a-marker/revoke`,
          operatorToken,
          reason,
        )
      ).status,
    ).toBe(400);
    expect(
      await call(
        'POST',
        `/v1/sessions/${tenantId}/${sessionId}/markers/${'f'.repeat(64)}/revoke`,
        operatorToken,
        reason,
      ),
    ).toMatchObject({ status: 409, body: { code: 'marker_not_trusted' } });
    expect(
      (
        await call(
          'POST',
          `/v1/sessions/${tenantId}/no-such-session/markers/${markerId}/revoke`,
          operatorToken,
          reason,
        )
      ).status,
    ).toBe(404);
    // Nothing above revoked anything.
    expect(
      (await call('GET', `/v1/sessions/${tenantId}/${sessionId}/resume`, resumeToken)).body,
    ).toMatchObject({
      mode: 'digest',
      markerId,
    });

    const revoked = await call('POST', revoke, operatorToken, reason);
    expect(revoked).toMatchObject({
      status: 200,
      body: { status: 'revoked', markerId, plan: { mode: 'raw', reason: 'newest_revoked' } },
    });
    const resumed = await call('GET', `/v1/sessions/${tenantId}/${sessionId}/resume`, resumeToken);
    expect(resumed.body).toMatchObject({ mode: 'raw', reason: 'newest_revoked' });
    expect(resumed.body.markerId).not.toBe(markerId);

    // Revoking twice is one revocation.
    expect(await call('POST', revoke, operatorToken, { reason: 'again' })).toMatchObject({
      status: 200,
      body: { status: 'already_revoked', revocationId: revoked.body.revocationId },
    });

    // The decision is on the markers topic, with who asked and why: `tidemark inspect` shows it once.
    const inspected = await tidemark(['inspect', `${tenantId}/${sessionId}`]);
    expect(inspected.code, inspected.stderr).toBe(0);
    const lines = inspected.stdout.split('\n').filter((line) => line.includes('✗ revoked'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`marker ${markerId.slice(0, 12)}`);
    expect(lines[0]).toMatch(/operator:[0-9a-f]{16}: the digest dropped the rollback plan$/);
  });

  it('revokes from the command line with the operator token from the environment', async () => {
    const sessionId = 'revoked-by-cli';
    const markerId = await digestSession(sessionId, 62);
    const args = [
      'revoke',
      `${tenantId}/${sessionId}`,
      markerId,
      '--reason',
      'wrong summary',
      '--url',
      e2e.pipeline.url,
    ];

    const without = await tidemark(args);
    expect(without.code).toBe(2);
    expect(without.stderr).toContain('TIDEMARK_OPERATOR_TOKEN');

    const done = await tidemark(args, { TIDEMARK_OPERATOR_TOKEN: operatorToken });
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ status: 'revoked', markerId, plan: { mode: 'raw' } });
    expect(done.stderr).toContain('now resumes in raw mode');
  });
});
