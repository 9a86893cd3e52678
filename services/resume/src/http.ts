import { sessionKey, sha256Hex, TidemarkCoreError } from '@tidemark/core';
import { maxParamLength } from '@tidemark/service';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { Authentication, TokenVerifier } from './auth.js';
import type { ResumeClient } from './client.js';
import { ResumeUnavailableError, type ResumeRefusal } from './outcomes.js';
import type { ExpandOutcome, Expander, TurnRange } from './expand.js';
import { inFormat, isResumeFormat, resumeFormats, type ResumeFormat } from './formats.js';
import type { Revoker } from './revoke.js';
import openapi from '../openapi.json' with { type: 'json' };

// The resume HTTP API. The tenant is in the path and must be the token's own: a token of tenant A asking
// for tenant B gets 403 before anything is looked up, so whether B has such a session never shows.
// Error bodies are `{ code, message }` and never echo a tenant or session id; logs name a session by a
// digest of its key, never by its ids, and never hold a token.

type ApiErrorCode =
  | ResumeRefusal
  | 'node_not_found'
  | 'marker_not_trusted'
  | 'unauthorized'
  | 'forbidden'
  | 'unavailable'
  | 'internal'
  | 'bad_request';

type RouteOutcome =
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly code: ApiErrorCode; readonly message: string };

const statusOf: Readonly<Record<ApiErrorCode, number>> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  session_not_found: 404,
  node_not_found: 404,
  no_plan: 409,
  node_pending: 409,
  marker_not_trusted: 409,
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

export function fail(reply: FastifyReply, code: ApiErrorCode, message: string): FastifyReply {
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

/**
 * Why a request may not read a session, checked in this order so nothing is looked up for a stranger:
 * the token, then its tenant, then the id; null when it may.
 */
export function sessionAccessRefusal(
  auth: Authentication,
  params: { readonly tenantId: string; readonly sessionId: string },
): { readonly code: 'unauthorized' | 'forbidden' | 'bad_request'; readonly message: string } | null {
  if (!auth.ok) {
    const message =
      auth.reason === 'missing' ? 'a bearer token is required' : 'the bearer token is not valid';
    return { code: 'unauthorized', message };
  }
  if (auth.tenantId !== params.tenantId)
    return { code: 'forbidden', message: "the token may not read this tenant's sessions" };
  if (!validId(params.sessionId)) return { code: 'bad_request', message: 'the session id is not valid' };
  return null;
}

/** What the log says of a session: a digest that correlates lines, never the ids themselves. */
const sessionRef = (tenantId: string, sessionId: string): string =>
  sha256Hex(sessionKey(tenantId, sessionId)).slice(0, 16);

/** A page's bounds from the query: each absent or a positive integer; null when one is not. */
function turnRange(query: Readonly<Record<string, string | undefined>>): TurnRange | null {
  const range: Record<string, number> = {};
  for (const name of ['fromSeq', 'toSeq', 'limit'] as const) {
    const text = query[name];
    if (text === undefined) continue;
    if (!/^[1-9][0-9]{0,14}$/.test(text)) return null;
    range[name] = Number(text);
  }
  return range;
}

/** An expand outcome as the API answers it (a range outside the node is a bad request). */
function expandAnswer<T>(outcome: ExpandOutcome<T>, wrap: (body: T) => unknown): RouteOutcome {
  if (outcome.ok) return { ok: true, body: wrap(outcome.body) };
  return {
    ok: false,
    code: outcome.code === 'bad_range' ? 'bad_request' : outcome.code,
    message: outcome.message,
  };
}

export function registerResumeRoutes(
  http: FastifyInstance,
  options: {
    client: ResumeClient;
    tokens: TokenVerifier;
    logger: Logger;
    /** Expand (the node routes); absent: not served. */
    expand?: Pick<Expander, 'node' | 'turns'>;
    /** Revoke, for the holders of operator tokens; absent: not served. */
    revoke?: { readonly operators: TokenVerifier; readonly revoker: Pick<Revoker, 'revoke'> };
  },
): void {
  const { client, tokens, logger } = options;
  if (options.revoke !== undefined) registerRevokeRoute(http, { tokens, logger, ...options.revoke });

  http.get('/openapi.json', () => openapi);

  // Every session route: the token, then the tenant (before anything is looked up), then the ids; a
  // refusal is its code's status, a failing dependency 503, an inconsistent state 500.
  type Params = { tenantId: string; sessionId: string; nodeId?: string };
  type Query = Record<string, string | undefined>;
  const sessionRoute = (
    path: string,
    action: 'resume' | 'status' | 'expand',
    call: (
      ref: { tenantId: string; sessionId: string },
      format: ResumeFormat,
      request: { params: Params; query: Query },
    ) => Promise<RouteOutcome>,
  ) =>
    http.get<{ Params: Params; Querystring: Query }>(path, async (request, reply) => {
      const refused = sessionAccessRefusal(
        tokens.authenticate(request.headers.authorization),
        request.params,
      );
      if (refused !== null) return fail(reply, refused.code, refused.message);
      const { tenantId, sessionId, nodeId } = request.params;
      if (nodeId !== undefined && !validId(nodeId))
        return fail(reply, 'bad_request', 'the node id is not valid');
      const format = request.query.format ?? 'tidemark';
      if (!isResumeFormat(format))
        return fail(reply, 'bad_request', `format must be one of ${resumeFormats.join(', ')}`);
      try {
        const outcome = await call({ tenantId, sessionId }, format, request);
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

  sessionRoute('/v1/sessions/:tenantId/:sessionId/resume', 'resume', async (ref, format) => {
    const outcome = await client.resume(ref.tenantId, ref.sessionId);
    return outcome.ok ? { ok: true, body: inFormat(outcome.result, format) } : outcome;
  });

  // The session's plan, watermark, next due compaction and staleness: what an operator (or a runtime
  // deciding whether to trust a resume) asks without building a context.
  const status = async (ref: { tenantId: string; sessionId: string }): Promise<RouteOutcome> => {
    const outcome = await client.status(ref.tenantId, ref.sessionId);
    return outcome.ok ? { ok: true, body: outcome.status } : outcome;
  };
  sessionRoute('/v1/sessions/:tenantId/:sessionId', 'status', status);
  sessionRoute('/v1/sessions/:tenantId/:sessionId/status', 'status', status);

  // Expand: a node of the session's summary, and the raw turns it covers, a page at a time.
  const { expand } = options;
  if (expand === undefined) return;
  sessionRoute(
    '/v1/sessions/:tenantId/:sessionId/nodes/:nodeId',
    'expand',
    async (ref, _format, { params }) =>
      expandAnswer(await expand.node(ref, params.nodeId!), (node) => ({ node })),
  );
  sessionRoute(
    '/v1/sessions/:tenantId/:sessionId/nodes/:nodeId/turns',
    'expand',
    async (ref, format, { params, query }) => {
      const range = turnRange(query);
      if (range === null)
        return {
          ok: false,
          code: 'bad_request',
          message: 'fromSeq, toSeq and limit must be positive integers',
        };
      return expandAnswer(await expand.turns(ref, params.nodeId!, range, format), (page) => page);
    },
  );
}

/** The longest reason a revocation takes (it goes on the markers topic, in the decision's detail). */
const maxReasonLength = 1000;

/**
 * Undo a compaction: `POST …/markers/{markerId}/revoke` with `{ "reason": "…" }`, for an operator token
 * of the session's tenant (a resume token is refused with 403: runtimes read, operators revoke). 200 once
 * the validator's decision is folded (or when the marker was revoked already), 202 while it is not yet.
 */
function registerRevokeRoute(
  http: FastifyInstance,
  options: {
    tokens: TokenVerifier;
    operators: TokenVerifier;
    revoker: Pick<Revoker, 'revoke'>;
    logger: Logger;
  },
): void {
  const { tokens, operators, revoker, logger } = options;
  type Params = { tenantId: string; sessionId: string; markerId: string };
  http.post<{ Params: Params; Body: unknown }>(
    '/v1/sessions/:tenantId/:sessionId/markers/:markerId/revoke',
    async (request, reply) => {
      const header = request.headers.authorization;
      const auth = operators.authenticate(header);
      if (!auth.ok) {
        if (tokens.authenticate(header).ok)
          return fail(reply, 'forbidden', 'revoking needs an operator token, not a resume token');
        return fail(
          reply,
          'unauthorized',
          auth.reason === 'missing'
            ? 'an operator bearer token is required'
            : 'the bearer token is not valid',
        );
      }
      const { tenantId, sessionId, markerId } = request.params;
      if (auth.tenantId !== tenantId)
        return fail(reply, 'forbidden', "the token may not revoke this tenant's markers");
      if (!validId(sessionId)) return fail(reply, 'bad_request', 'the session id is not valid');
      if (!/^[0-9a-f]{64}$/.test(markerId))
        return fail(reply, 'bad_request', 'the marker id is 64 lowercase hex digits');
      const reason = (request.body as { reason?: unknown } | null)?.reason;
      if (
        typeof reason !== 'string' ||
        reason.trim().length === 0 ||
        reason.length > maxReasonLength ||
        controlCharacters.test(reason)
      ) {
        return fail(
          reply,
          'bad_request',
          `the body must be {"reason": "…"}: why, 1 to ${maxReasonLength} characters, no control characters`,
        );
      }
      const session = sessionRef(tenantId, sessionId);
      try {
        const requestedBy = `operator:${auth.tokenRef}`;
        const outcome = await revoker.revoke({ tenantId, sessionId }, markerId, {
          reason: reason.trim(),
          requestedBy,
        });
        if (!outcome.ok) return fail(reply, outcome.code, outcome.message);
        logger.info({ session, markerId, requestedBy, status: outcome.body.status }, 'revoke requested');
        return reply.code(outcome.body.status === 'pending' ? 202 : 200).send(outcome.body);
      } catch (error) {
        if (error instanceof ResumeUnavailableError) {
          logger.warn({ err: error, session }, 'revoke unavailable');
          return fail(
            reply,
            'unavailable',
            'a dependency of the resume service is unavailable; retry shortly',
          );
        }
        logger.error({ err: error, session }, 'revoke failed');
        return fail(reply, 'internal', 'internal error');
      }
    },
  );
}
