import { fastify, type FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Logger } from 'pino';
import { createLogger } from './logger.js';
import type { ServiceState } from './state.js';

// The process-facing side of a service: an HTTP listener with /healthz, /readyz and /metrics, the
// metrics registry, and an ordered list of things to close. The service's own logic never touches
// process signals; `runUntilSignalled` (or the all-in-one runner) decides when to close.

/**
 * The longest path parameter the host's router takes, percent-encoded (fastify's default is 100): ids in
 * paths may be long and non-ASCII; handlers bound them decoded. Longer ones are a 404 before any handler.
 */
export const maxParamLength = 8192;

export type ReadinessCheck = () => boolean | Promise<boolean>;

export interface ServiceHostOptions {
  readonly name: string;
  readonly port: number;
  readonly host?: string;
  readonly logger?: Logger;
  /** A registry to share between services in one process; a new one when absent. */
  readonly register?: Registry;
  /** Collect Node process metrics (default true; set false for the second service sharing a registry). */
  readonly processMetrics?: boolean;
}

export interface ServiceHost {
  readonly name: string;
  readonly logger: Logger;
  readonly metrics: Registry;
  /** The fastify instance, for routes of a service's own (register them before listen()). */
  readonly http: FastifyInstance;
  /**
   * Ready only when every registered check answers true (and the host is not closing). The checks run
   * side by side: /readyz takes as long as the slowest, so a check that may wait on a dependency must
   * bound itself (`dependencyCheck`).
   */
  addReadiness(name: string, check: ReadinessCheck): void;
  /** A service's state, reported on /readyz; ready only while every one is `ready`. */
  addState(name: string, state: () => ServiceState): void;
  /** Runs on close, in reverse order of registration (last started, first stopped). */
  onShutdown(step: () => Promise<void> | void): void;
  listen(): Promise<{ readonly port: number; readonly url: string }>;
  readiness(): Promise<Readiness>;
  close(): Promise<void>;
}

/** The body of /readyz. */
export interface Readiness {
  readonly ready: boolean;
  readonly states: Record<string, ServiceState>;
  readonly checks: Record<string, boolean>;
}

/**
 * The HTTP server every service is hosted on: long path parameters, and answers that never echo what was
 * asked (fastify's defaults repeat the path in a 404 and the parser's complaint in a 400), so an id or a
 * token in a request never comes back in a response.
 */
export function httpServer(): FastifyInstance {
  const http = fastify({ logger: false, routerOptions: { maxParamLength } });
  http.setNotFoundHandler((_request, reply) =>
    reply.code(404).send({ code: 'not_found', message: 'no such route' }),
  );
  http.setErrorHandler((error: { statusCode?: number }, _request, reply) => {
    const status =
      error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500
        ? error.statusCode
        : 500;
    return reply
      .code(status)
      .send(
        status === 500
          ? { code: 'internal', message: 'internal error' }
          : { code: 'bad_request', message: 'the request is not valid' },
      );
  });
  return http;
}

export function createServiceHost(options: ServiceHostOptions): ServiceHost {
  const logger = options.logger ?? createLogger(options.name);
  const metrics = options.register ?? new Registry();
  if (options.processMetrics ?? options.register === undefined) collectDefaultMetrics({ register: metrics });
  const checks = new Map<string, ReadinessCheck>();
  const states = new Map<string, () => ServiceState>();
  const shutdownSteps: (() => Promise<void> | void)[] = [];
  let closing: Promise<void> | null = null;

  const http = httpServer();

  const readiness = async (): Promise<Readiness> => {
    const results = await Promise.all(
      [...checks].map(async ([name, check]): Promise<[string, boolean]> => {
        try {
          return [name, await check()];
        } catch (error) {
          logger.warn({ err: error, check: name }, 'readiness check failed');
          return [name, false];
        }
      }),
    );
    const now = Object.fromEntries([...states].map(([name, state]) => [name, state()]));
    const ready =
      closing === null && results.every(([, ok]) => ok) && Object.values(now).every((s) => s === 'ready');
    return { ready, states: now, checks: Object.fromEntries(results) };
  };

  // Liveness: the event loop answers. Readiness: the service can do its job right now.
  http.get('/healthz', () => ({ status: 'ok', service: options.name }));
  http.get('/readyz', async (_request, reply) => {
    const state = await readiness();
    return reply
      .code(state.ready ? 200 : 503)
      .send({ status: state.ready ? 'ready' : 'not_ready', ...state });
  });
  http.get('/metrics', async (_request, reply) =>
    reply.header('content-type', metrics.contentType).send(await metrics.metrics()),
  );

  return {
    name: options.name,
    logger,
    metrics,
    http,
    addReadiness(name, check) {
      checks.set(name, check);
    },
    addState(name, state) {
      states.set(name, state);
    },
    onShutdown(step) {
      shutdownSteps.push(step);
    },
    async listen() {
      await http.listen({ port: options.port, host: options.host ?? '127.0.0.1' });
      const address = http.server.address();
      const port = typeof address === 'object' && address !== null ? address.port : options.port;
      const url = `http://${options.host ?? '127.0.0.1'}:${port}`;
      logger.info({ url }, `${options.name} listening`);
      return { port, url };
    },
    readiness,
    close() {
      closing ??= (async () => {
        for (const step of shutdownSteps.reverse()) {
          try {
            await step();
          } catch (error) {
            logger.error({ err: error }, 'shutdown step failed');
          }
        }
        await http.close();
        logger.info(`${options.name} stopped`);
      })();
      return closing;
    },
  };
}
