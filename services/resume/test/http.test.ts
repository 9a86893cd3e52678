import { TidemarkCoreError } from '@tidemark/core';
import { fastify } from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { hashToken, parseTokenList, TokenVerifier } from '../src/auth.js';
import type { ResumeClient } from '../src/client.js';
import { refusal, ResumeUnavailableError, type ResumeOutcome, type StatusOutcome } from '../src/outcomes.js';
import { registerResumeRoutes } from '../src/http.js';

// The HTTP mapping of every outcome, over an in-process client (the real one is tested against the stack).

const tokens = new TokenVerifier(parseTokenList(`tenant-a:${hashToken('alpha')}`));

function app(
  resume: ResumeClient['resume'],
  status: ResumeClient['status'] = () => Promise.resolve(statusOk),
) {
  const http = fastify();
  registerResumeRoutes(http, { client: { resume, status }, tokens, logger: pino({ level: 'silent' }) });
  return (path: string, token: string | null = 'alpha') =>
    http.inject({
      method: 'GET',
      url: path,
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
    });
}

const ok: ResumeOutcome = {
  ok: true,
  result: {
    tenantId: 'tenant-a',
    sessionId: 's',
    mode: 'raw',
    markerId: null,
    nodeId: null,
    reason: 'no_marker',
    frame: null,
    rawFromSeq: 1,
    rawToSeq: 0,
    messages: [],
    contextHash: 'h',
    stale: { since: '2026-12-01T00:00:00.000Z', reason: 'compaction_overdue' },
    broken: null,
    stalled: null,
  },
  context: null as never,
};

const statusOk: StatusOutcome = {
  ok: true,
  status: {
    tenantId: 'tenant-a',
    sessionId: 's',
    plan: null,
    appliedSeq: 12,
    lastCompactedSeq: 0,
    broken: null,
    stalled: null,
    compaction: { l1EveryTurns: 10, decidedL1ToSeq: 0, dueSeq: 10, due: true },
    stale: { since: '2026-12-01T00:00:00.000Z', reason: 'compaction_overdue' },
    settled: false,
  },
};

describe('the resume routes', () => {
  it('maps refusals to 404, 409 and 503 with a code, a message and Retry-After when retrying helps', async () => {
    for (const [code, status, retry] of [
      ['session_not_found', 404, undefined],
      ['no_plan', 409, '5'],
      ['node_pending', 409, '1'],
      ['rebuilding', 503, '5'],
      ['projection_behind', 503, '1'],
      ['l0_incomplete', 503, '1'],
    ] as const) {
      const get = app(() => Promise.resolve(refusal(code)));
      const response = await get('/v1/sessions/tenant-a/s/resume');
      expect(response.statusCode).toBe(status);
      expect(response.json()).toEqual({ code, message: expect.any(String) as unknown });
      expect(response.headers['retry-after']).toBe(retry);
    }
  });

  it('answers 503 when a dependency fails and 500 for an inconsistent state, without ids in the body', async () => {
    const unavailable = app(() =>
      Promise.reject(new ResumeUnavailableError('redis down for s-secret', { cause: new Error('x') })),
    );
    const down = await unavailable('/v1/sessions/tenant-a/s-secret/resume');
    expect(down.statusCode).toBe(503);
    expect(down.json<{ code: string }>().code).toBe('unavailable');
    expect(down.body).not.toContain('s-secret');
    const broken = app(() => Promise.reject(new TidemarkCoreError('invalid_input', 'plan of s-secret')));
    const internal = await broken('/v1/sessions/tenant-a/s-secret/resume');
    expect(internal.statusCode).toBe(500);
    expect(internal.body).not.toContain('s-secret');
  });

  it('checks the token before the tenant, and the tenant before the client is asked', async () => {
    let asked = 0;
    const get = app(() => {
      asked += 1;
      return Promise.resolve(ok);
    });
    expect((await get('/v1/sessions/tenant-a/s/resume', null)).statusCode).toBe(401);
    expect((await get('/v1/sessions/tenant-a/s/resume', null)).headers['www-authenticate']).toMatch(
      /^Bearer/,
    );
    expect((await get('/v1/sessions/tenant-b/s/resume')).statusCode).toBe(403);
    expect((await get('/v1/sessions/tenant-a/a%00b/resume')).statusCode).toBe(400);
    expect(asked).toBe(0);
    const read = await get('/v1/sessions/tenant-a/s/resume');
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual(ok.ok ? ok.result : null);
    expect(asked).toBe(1);
  });

  it('gives the context in a provider format on ?format=, and refuses an unknown one with 400 before the client', async () => {
    const withTurns: ResumeOutcome = {
      ...ok,
      result: {
        ...ok.result,
        rawToSeq: 2,
        messages: [
          { role: 'user', content: 'Migrate the users table.' },
          { role: 'assistant', content: 'On it.' },
        ],
      },
    };
    let asked = 0;
    const get = app(() => {
      asked++;
      return Promise.resolve(withTurns);
    });
    const anthropic = await get('/v1/sessions/tenant-a/s/resume?format=anthropic');
    expect(anthropic.statusCode).toBe(200);
    const body = anthropic.json<{
      format: string;
      body: { messages: unknown[] };
      contextHash: string;
      messages?: unknown;
    }>();
    expect(body.format).toBe('anthropic');
    expect(body.body.messages).toHaveLength(2);
    expect(body.messages).toBeUndefined();
    expect(body.contextHash).not.toBe('h');
    expect((await get('/v1/sessions/tenant-a/s/resume?format=tidemark')).json()).toEqual(withTurns.result);
    expect(asked).toBe(2);
    const unknown = await get('/v1/sessions/tenant-a/s/resume?format=gemini');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json<{ code: string }>().code).toBe('bad_request');
    expect(asked).toBe(2);
  });

  it('serves its OpenAPI document', async () => {
    const response = await app(() => Promise.resolve(ok))('/openapi.json', null);
    expect(response.statusCode).toBe(200);
    expect(response.json<{ openapi: string }>().openapi).toMatch(/^3\./);
  });

  it('answers the status route under the same rules as resume: 401, 403, 400 before the client, 404 from it', async () => {
    let asked = 0;
    const get = app(
      () => Promise.resolve(ok),
      (_tenantId, sessionId) => {
        asked += 1;
        return Promise.resolve(
          sessionId === 'unknown'
            ? { ok: false, code: 'session_not_found', message: 'no such session' }
            : statusOk,
        );
      },
    );
    expect((await get('/v1/sessions/tenant-a/s/status', null)).statusCode).toBe(401);
    expect((await get('/v1/sessions/tenant-a/s/status', 'not-alpha')).statusCode).toBe(401);
    expect((await get('/v1/sessions/tenant-b/s/status')).statusCode).toBe(403);
    expect((await get('/v1/sessions/tenant-a/a%00b/status')).statusCode).toBe(400);
    expect(asked).toBe(0);
    const unknown = await get('/v1/sessions/tenant-a/unknown/status');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ code: 'session_not_found', message: expect.any(String) as unknown });
    const read = await get('/v1/sessions/tenant-a/s/status');
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual(statusOk.ok ? statusOk.status : null);
    const down = app(
      () => Promise.resolve(ok),
      () => Promise.reject(new ResumeUnavailableError('redis down', { cause: new Error('x') })),
    );
    expect((await down('/v1/sessions/tenant-a/s/status')).statusCode).toBe(503);
  });

  it('answers GET /v1/sessions/{t}/{s} as the status, under the same auth, with settled', async () => {
    const get = app(
      () => Promise.resolve(ok),
      () => Promise.resolve(statusOk),
    );
    expect((await get('/v1/sessions/tenant-a/s', null)).statusCode).toBe(401);
    expect((await get('/v1/sessions/tenant-b/s')).statusCode).toBe(403);
    const read = await get('/v1/sessions/tenant-a/s');
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({ appliedSeq: 12, settled: false, compaction: { decidedL1ToSeq: 0 } });
  });
});
