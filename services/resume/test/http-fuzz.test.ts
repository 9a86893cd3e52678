import { Writable } from 'node:stream';
import fc from 'fast-check';
import { httpServer } from '@tidemark/service';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { hashToken, parseTokenList, TokenVerifier } from '../src/auth.js';
import type { ResumeClient } from '../src/client.js';
import { httpLimits } from '../src/http.js';
import { refusal, ResumeUnavailableError, type ResumeOutcome } from '../src/outcomes.js';
import { registerResumeRoutes } from '../src/http.js';

// The resume API under hostile requests: any path, any header, any token. Whatever arrives, the answer is
// never a 5xx unless a dependency failed, a token only ever reads its own tenant, and no token or id is
// ever written to the log. The client behind the routes is in-process (the routes are what is tested);
// it fails for some sessions so the error paths, which log, are taken too.

const tenants = { alpha: 'tenant-a', bravo: 'tenant-b' } as const;
const tokens = new TokenVerifier(
  parseTokenList(
    Object.entries(tenants)
      .map(([token, tenant]) => `${tenant}:${hashToken(token)}`)
      .join(','),
  ),
);

/** A client that answers every session it is asked for with its own ids, and fails for some. */
function recordingClient(asked: Array<[string, string]>): ResumeClient {
  const resume = (tenantId: string, sessionId: string): Promise<ResumeOutcome> => {
    asked.push([tenantId, sessionId]);
    if (sessionId.startsWith('x'))
      return Promise.reject(new ResumeUnavailableError('redis', { cause: new Error('down') }));
    if (sessionId.startsWith('y')) return Promise.reject(new Error('boom'));
    if (sessionId.startsWith('z')) return Promise.resolve(refusal('session_not_found'));
    return Promise.resolve({
      ok: true,
      result: {
        tenantId,
        sessionId,
        mode: 'raw',
        markerId: null,
        nodeId: null,
        reason: 'no_marker',
        frame: null,
        rawFromSeq: 1,
        rawToSeq: 0,
        messages: [],
        contextHash: 'h',
        stale: null,
        broken: null,
        stalled: null,
      },
      context: null as never,
    });
  };
  return {
    resume,
    status: (tenantId, sessionId) =>
      resume(tenantId, sessionId).then(() => ({
        ok: false as const,
        code: 'session_not_found' as const,
        message: 'no such session',
      })),
  };
}

function harness() {
  const asked: Array<[string, string]> = [];
  const logged: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push(chunk.toString());
      done();
    },
  });
  const http = httpServer();
  registerResumeRoutes(http, {
    client: recordingClient(asked),
    tokens,
    logger: pino({ level: 'debug' }, sink),
  });
  return { http, asked, logged };
}

// Ids a tenant or a session might have, or an attacker might send: separators, glob and hash-tag
// characters, unicode, control characters, and long ones.
const id = fc.oneof(
  fc.constantFrom(
    'tenant-a',
    'tenant-b',
    's',
    'x-down',
    'y-boom',
    'z-gone',
    'a/x',
    '{t}',
    '*',
    ':',
    '..',
    '%2F',
  ),
  fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
  fc.string({
    minLength: 0,
    maxLength: 12,
    unit: fc.constantFrom('/', '{', '}', ':', '*', '\u0000', '\n', 'é', '🙂', '%'),
  }),
  fc.integer({ min: 200, max: 1200 }).map((n) => 'y'.repeat(n)),
);
const token = fc.oneof(
  fc.constantFrom('alpha', 'bravo', '', ' ', 'alpha ', 'Bearer'),
  fc.string({ maxLength: 64 }),
  fc.integer({ min: 1000, max: 20_000 }).map((n) => 'a'.repeat(n)),
);
const scheme = fc.constantFrom('Bearer ', 'bearer ', 'Basic ', '', 'Bearer  ');
const route = fc.constantFrom('/resume', '', '/status', '/resume?format=anthropic', '/resume?format=nope');

describe('the resume API under hostile requests', () => {
  it('never answers 5xx but for a failing dependency, never reads another tenant, never logs a token or an id', async () => {
    await fc.assert(
      fc.asyncProperty(id, id, token, scheme, route, async (tenantId, sessionId, secret, prefix, suffix) => {
        const { http, asked, logged } = harness();
        const url = `/v1/sessions/${encodeURIComponent(tenantId)}/${encodeURIComponent(sessionId)}${suffix}`;
        const response = await http.inject({
          method: 'GET',
          url,
          headers: { authorization: `${prefix}${secret}` },
        });
        const failing = sessionId.startsWith('x') || sessionId.startsWith('y');
        if (response.statusCode >= 500) {
          expect({ url, status: response.statusCode, failing }).toMatchObject({ failing: true });
        }
        // The client is asked only for the token's own tenant, and only with a valid token.
        const owner =
          prefix.trim().toLowerCase() === 'bearer'
            ? tenants[secret.trim() as keyof typeof tenants]
            : undefined;
        for (const [askedTenant] of asked) expect(askedTenant).toBe(owner);
        if (response.statusCode === 200) {
          expect(response.json<{ tenantId: string }>().tenantId).toBe(owner);
        }
        // Error bodies never echo an id; logs never hold a token or an id.
        const text = logged.join('\n');
        for (const secretPart of [secret, tenantId, sessionId].filter((s) => s.length >= 6)) {
          expect(text.includes(secretPart), `logged ${JSON.stringify(secretPart)}`).toBe(false);
          if (response.statusCode !== 200) expect(response.body.includes(secretPart)).toBe(false);
        }
        await http.close();
      }),
      { numRuns: 400 },
    );
  });

  it('serves any session id, escaped in the path, up to the limit; past it a 400, not a 404 or a 5xx', async () => {
    const { http, asked } = harness();
    const get = (sessionId: string) =>
      http.inject({
        method: 'GET',
        url: `/v1/sessions/tenant-a/${encodeURIComponent(sessionId)}/resume`,
        headers: { authorization: 'Bearer alpha' },
      });
    for (const sessionId of ['checkout refactor', 'a/x', '{s}', 'é🙂', 's'.repeat(httpLimits.maxIdLength)]) {
      const response = await get(sessionId);
      expect({ sessionId, status: response.statusCode }).toEqual({ sessionId, status: 200 });
      expect(response.json<{ sessionId: string }>().sessionId).toBe(sessionId);
    }
    expect(asked.map(([, s]) => s)).toHaveLength(5);
    for (const sessionId of ['s'.repeat(httpLimits.maxIdLength + 1), 'bad\u0000id', 'bad\nid']) {
      const response = await get(sessionId);
      expect({ status: response.statusCode, body: response.json<unknown>() }).toEqual({
        status: 400,
        body: { code: 'bad_request', message: 'the session id is not valid' },
      });
    }
    await http.close();
  });
});
