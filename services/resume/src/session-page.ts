import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Bus, L0Reader, SessionHistory, turnDecoder } from '@tidemark/contract';
import { TidemarkCoreError } from '@tidemark/core';
import { Projection, type RedisClient } from '@tidemark/state';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { TokenVerifier } from './auth.js';
import type { ResumeClient } from './client.js';
import { fail, sessionAccessRefusal } from './http.js';
import { ResumeUnavailableError } from './outcomes.js';
import { createSessionViewReader, type SessionViewReader } from './session-view-reader.js';

// A picture of a session: `GET /ui/sessions/:tenantId/:sessionId` serves one self-contained page (no
// data in it: it asks for the tenant's bearer token, keeps it in sessionStorage, and polls the view),
// and `GET /v1/sessions/:tenantId/:sessionId/view` answers what the page shows, under the same rules as
// every session route: the token, then its tenant (403 before anything is looked up), then the ids.

const page = readFileSync(new URL('../ui/session-page.html', import.meta.url), 'utf8');

/** The page's inline script and style, allowed by their digests and nothing else. */
const contentSecurityPolicy = (() => {
  const digest = (tag: 'script' | 'style') => {
    const body = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(page)?.[1];
    if (body === undefined) throw new Error(`the session page has no <${tag}>`);
    return `'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`;
  };
  return [
    "default-src 'none'",
    `script-src ${digest('script')}`,
    `style-src ${digest('style')}`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
})();

/** What the page's routes need from the service once it has connected (null before: 503). */
export interface SessionPageSources {
  readonly bus: Bus;
  readonly redis: RedisClient;
  readonly client: Pick<ResumeClient, 'status'>;
}

export interface SessionPageDeps {
  readonly tokens: TokenVerifier;
  readonly logger: Logger;
  /** REDIS_PREFIX (the projection's keys). */
  readonly redisPrefix: string;
  readonly sources: () => SessionPageSources | null;
}

/** Registers the page and its view; close() releases the readers the view opened. */
export function registerSessionPage(
  http: FastifyInstance,
  deps: SessionPageDeps,
): { close(): Promise<void> } {
  const { tokens, logger } = deps;
  let opened: {
    readonly sources: SessionPageSources;
    readonly reader: SessionViewReader;
    close(): Promise<void>;
  } | null = null;

  // The view's readers, made on first use over the service's connections.
  const readerOf = (sources: SessionPageSources): SessionViewReader => {
    if (opened?.sources.bus === sources.bus && opened.sources.redis === sources.redis) return opened.reader;
    const { bus, redis, client } = sources;
    const history = new SessionHistory(bus);
    const turns = new L0Reader({ kafka: bus.kafka, decode: turnDecoder(bus.registry, bus.maxEventBytes) });
    const reader = createSessionViewReader({
      status: (tenantId, sessionId) => client.status(tenantId, sessionId),
      history,
      log: new Projection(redis, { prefix: deps.redisPrefix }),
      turns,
      turnsTopic: bus.topics.turns,
    });
    const previous = opened;
    opened = {
      sources,
      reader,
      close: async () => {
        await Promise.all([history.close(), turns.close()]);
      },
    };
    void previous?.close().catch(() => undefined);
    return reader;
  };

  http.get<{ Params: { tenantId: string; sessionId: string } }>(
    '/ui/sessions/:tenantId/:sessionId',
    (_request, reply) =>
      reply
        .header('content-type', 'text/html; charset=utf-8')
        .header('content-security-policy', contentSecurityPolicy)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .send(page),
  );

  http.get<{ Params: { tenantId: string; sessionId: string } }>(
    '/v1/sessions/:tenantId/:sessionId/view',
    async (request, reply) => {
      const refused = sessionAccessRefusal(
        tokens.authenticate(request.headers.authorization),
        request.params,
      );
      if (refused !== null) return fail(reply, refused.code, refused.message);
      const { tenantId, sessionId } = request.params;
      void reply.header('cache-control', 'no-store');
      try {
        const sources = deps.sources();
        if (sources === null) {
          const cause = new Error('resume service not started');
          throw new ResumeUnavailableError(cause.message, { cause });
        }
        const outcome = await readerOf(sources).view(tenantId, sessionId);
        if (!outcome.ok) return fail(reply, outcome.code, outcome.message);
        return reply.code(200).send(outcome.view);
      } catch (error) {
        // A core error is an inconsistent state, a TypeError ours; the rest is a dependency failing.
        if (error instanceof TidemarkCoreError || error instanceof TypeError) {
          logger.error({ err: error }, 'session view failed');
          const message =
            error instanceof TidemarkCoreError ? 'the resume state is inconsistent' : 'internal error';
          return fail(reply, 'internal', message);
        }
        logger.warn({ err: error }, 'session view unavailable');
        return fail(reply, 'unavailable', 'a dependency of the resume service is unavailable; retry shortly');
      }
    },
  );

  return {
    async close() {
      const last = opened;
      opened = null;
      await last?.close();
    },
  };
}
