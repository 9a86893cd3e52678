import { sessionKey, sha256Hex, TidemarkCoreError } from '@tidemark/core';
import { maxParamLength } from '@tidemark/service';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { TokenVerifier } from './auth.js';
import type { ResumeClient } from './client.js';
import { ResumeUnavailableError, type ResumeRefusal } from './outcomes.js';
import { inFormat, isResumeFormat, resumeFormats, type ResumeFormat } from './formats.js';
import openapi from '../openapi.json' with { type: 'json' };

// The resume HTTP API. The tenant is in the path and must be the token's own: a token of tenant A asking
// for tenant B gets 403 before anything is looked up, so whether B has such a session never shows.
// Error bodies are `{ code, message }` and never echo a tenant or session id; logs name a session by a
// digest of its key, never by its ids, and never hold a token.

type ApiErrorCode = ResumeRefusal | 'unauthorized' | 'forbidden' | 'unavailable' | 'internal' | 'bad_request';

const statusOf: Readonly<Record<ApiErrorCode, number>> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  session_not_found: 404,
  no_plan: 409,
  node_pending: 409,
  projection_behind: 503,
  rebuilding: 503,
  l0_incomplete: 503,
  unavailable: 503,
  internal: 500,
};

const retryAfterSeconds: Partial<Record<ApiErrorCode, number>> = {
  no_plan: 5,
  node_pending: 1,
  projection_behind: 1,
  rebuilding: 5,
  l0_incomplete: 1,
  unavailable: 2,
};

function fail(reply: FastifyReply, code: ApiErrorCode, message: string): FastifyReply {
  const retry = retryAfterSeconds[code];
  if (retry !== undefined) void reply.header('retry-after', String(retry));
  if (code === 'unauthorized') void reply.header('www-authenticate', 'Bearer realm="tidemark-resume"');
  return reply.code(statusOf[code]).send({ code, message });
}

/**
 * What the API takes: a session id of any characters but control ones, percent-encoded in the path, of at
 * most maxIdLength characters decoded (the pipeline's keys escape whatever an id holds, so the API need
 * not narrow it); path parameters up to maxParamLength encoded (the host's router refuses longer ones
 * with a 404 before any handler).
 */
export const httpLimits = { maxIdLength: 512, maxParamLength } as const;

// eslint-disable-next-line no-control-regex -- control characters are exactly what an id may not hold
const controlCharacters = /[\u0000-\u001f\u007f]/;
const validId = (id: string): boolean =>
  id.length > 0 && id.length <= httpLimits.maxIdLength && !controlCharacters.test(id);

/** What the log says of a session: a digest that correlates lines, never the ids themselves. */
const sessionRef = (tenantId: string, sessionId: string): string =>
  sha256Hex(sessionKey(tenantId, sessionId)).slice(0, 16);

export function registerResumeRoutes(
  http: FastifyInstance,
  options: { client: ResumeClient; tokens: TokenVerifier; logger: Logger },
): void {
  const { client, tokens, logger } = options;

  http.get('/openapi.json', () => openapi);

  // Both session routes: the token, then the tenant (before anything is looked up), then the id; a
  // refusal is its code's status, a failing dependency 503, an inconsistent state 500.
  const sessionRoute = <T>(
    path: string,
    action: 'resume' | 'status',
    call: (
      tenantId: string,
      sessionId: string,
      format: ResumeFormat,
    ) => Promise<{ ok: true; body: T } | { ok: false; code: ResumeRefusal; message: string }>,
  ) =>
    http.get<{
      Params: { tenantId: string; sessionId: string };
      Querystring: { format?: string };
    }>(path, async (request, reply) => {
      const auth = tokens.authenticate(request.headers.authorization);
      if (!auth.ok) {
        return fail(
          reply,
          'unauthorized',
          auth.reason === 'missing' ? 'a bearer token is required' : 'the bearer token is not valid',
        );
      }
      const { tenantId, sessionId } = request.params;
      if (auth.tenantId !== tenantId)
        return fail(reply, 'forbidden', "the token may not read this tenant's sessions");
      if (!validId(sessionId)) return fail(reply, 'bad_request', 'the session id is not valid');
      const format = request.query.format ?? 'tidemark';
      if (!isResumeFormat(format))
        return fail(reply, 'bad_request', `format must be one of ${resumeFormats.join(', ')}`);
      try {
        const outcome = await call(tenantId, sessionId, format);
        if (!outcome.ok) return fail(reply, outcome.code, outcome.message);
        return reply.code(200).send(outcome.body);
      } catch (error) {
        if (error instanceof ResumeUnavailableError) {
          logger.warn({ err: error, session: sessionRef(tenantId, sessionId) }, `${action} unavailable`);
          return fail(
            reply,
            'unavailable',
            'a dependency of the resume service is unavailable; retry shortly',
          );
        }
        logger.error({ err: error, session: sessionRef(tenantId, sessionId) }, `${action} failed`);
        const message =
          error instanceof TidemarkCoreError ? 'the resume state is inconsistent' : 'internal error';
        return fail(reply, 'internal', message);
      }
    });

  sessionRoute('/v1/sessions/:tenantId/:sessionId/resume', 'resume', async (tenantId, sessionId, format) => {
    const outcome = await client.resume(tenantId, sessionId);
    return outcome.ok ? { ok: true, body: inFormat(outcome.result, format) } : outcome;
  });

  // The session's plan, watermark, next due compaction and staleness: what an operator (or a runtime
  // deciding whether to trust a resume) asks without building a context.
  const status = async (tenantId: string, sessionId: string) => {
    const outcome = await client.status(tenantId, sessionId);
    return outcome.ok ? { ok: true as const, body: outcome.status } : outcome;
  };
  sessionRoute('/v1/sessions/:tenantId/:sessionId', 'status', status);
  sessionRoute('/v1/sessions/:tenantId/:sessionId/status', 'status', status);
}
