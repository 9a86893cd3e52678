import { TidemarkError } from '@tidemark/core';
import type { LevelWithSilent, Logger } from 'pino';
import { Registry } from 'prom-client';
import type { z } from 'zod';
import { parseConfig } from './config.js';
import { limitHeapGrowth } from './heap.js';
import { createServiceHost, type ReadinessCheck, type ServiceHost } from './host.js';
import { createLogger } from './logger.js';
import { runUntilSignalled } from './shutdown.js';
import type { ServiceState } from './state.js';

// The one shape of a Tidemark service. Every service module exports `create(config, deps)` returning a
// Service; a host runs any set of them, one per process (`runMain`) or all in one (`tidemark start`).

export interface Service {
  /** Connects and starts consuming; resolves once running (not when stopped). */
  run(): Promise<void>;
  /** Stops intake, drains, commits what was done and disconnects. Idempotent. */
  stop(): Promise<void>;
  readonly state: ServiceState;
  /**
   * Pings of what it cannot work without (its Redis connection, its Kafka bus), each bounded by a
   * deadline (`dependencyCheck`), by name: mounted as the readiness checks `<service>.<name>`.
   */
  readonly dependencies?: Readonly<Record<string, ReadinessCheck>>;
}

/** What a host gives a service; run alone (a test, a benchmark) it makes its own. */
export interface HostedDeps {
  readonly logger?: Logger;
  /** The metrics registry (the host's). */
  readonly metrics?: Registry;
}

/** A service's logger and metrics registry: its host's, or its own when it runs alone. */
export function hostedBy(
  name: string,
  logLevel: LevelWithSilent,
  deps: HostedDeps,
): { readonly logger: Logger; readonly metrics: Registry } {
  return { logger: deps.logger ?? createLogger(name, logLevel), metrics: deps.metrics ?? new Registry() };
}

/**
 * Runs a service inside a host: its state (and its dependencies) join the host's readiness, and closing
 * the host stops it. Several services may share one host (the all-in-one `tidemark start`).
 */
export async function mountService(host: ServiceHost, name: string, service: Service): Promise<void> {
  host.addState(name, () => service.state);
  for (const [dependency, check] of Object.entries(service.dependencies ?? {})) {
    host.addReadiness(`${name}.${dependency}`, check);
  }
  host.onShutdown(() => service.stop());
  await service.run();
  host.logger.info({ service: name }, `${name} started`);
}

/** What every service's configuration holds for its process (`commonConfig`). */
interface ProcessConfig {
  readonly HTTP_PORT: number;
  readonly HTTP_HOST: string;
  readonly LOG_LEVEL: LevelWithSilent;
  readonly SHUTDOWN_GRACE_MS: number;
  readonly START_WITHIN_MS: number;
  readonly HEAP_GROWING_PERCENT: number;
}

/** The backoff between tries to start while a dependency is away (for up to START_WITHIN_MS). */
const startRetry = { firstMs: 500, maxMs: 10_000 } as const;

/**
 * A service's `main.ts` in one call: its configuration parsed from the environment, a host (/healthz,
 * /readyz, /metrics on HTTP_PORT), the service, and a graceful shutdown on SIGTERM/SIGINT. A bad
 * configuration is logged and exits 2. A failure to start (the broker, the registry or Redis away) is
 * logged and tried again, with a fresh service and host, backing off, for START_WITHIN_MS; then, or
 * at once for an error Tidemark knows will not pass (`retriable: false`), it exits 1.
 */
export async function runMain<Schema extends z.ZodType<ProcessConfig>>(
  name: string,
  schema: Schema,
  create: (config: z.infer<Schema>, host: ServiceHost) => Service | Promise<Service>,
): Promise<ServiceHost | null> {
  let config: z.infer<Schema>;
  try {
    config = parseConfig(schema);
  } catch (error) {
    createLogger(name).fatal({ err: error }, `${name} cannot start: ${(error as Error).message}`);
    process.exitCode = 2;
    return null;
  }
  limitHeapGrowth(config.HEAP_GROWING_PERCENT);
  const logger = createLogger(name, config.LOG_LEVEL);
  let host: ServiceHost | null = null;
  let signalled = false;
  runUntilSignalled(
    {
      name,
      logger,
      close: async () => {
        signalled = true;
        await host?.close();
      },
    },
    config.SHUTDOWN_GRACE_MS,
  );
  const deadline = Date.now() + config.START_WITHIN_MS;
  for (let pause: number = startRetry.firstMs; ; pause = Math.min(pause * 2, startRetry.maxMs)) {
    const attempt = createServiceHost({ name, port: config.HTTP_PORT, host: config.HTTP_HOST, logger });
    host = attempt;
    try {
      await mountService(attempt, name, await create(config, attempt));
      await attempt.listen();
      return attempt;
    } catch (error) {
      await attempt.close();
      const knownToFail = error instanceof TidemarkError && !error.retriable;
      if (signalled) return null;
      if (knownToFail || Date.now() + pause > deadline) {
        logger.fatal({ err: error }, `${name} failed to start`);
        process.exitCode = 1;
        return null;
      }
      logger.warn(
        { err: error, retryInMs: pause },
        `${name} could not start (a dependency away?); trying again`,
      );
      await new Promise((resolve) => setTimeout(resolve, pause));
      if (signalled) return null;
    }
  }
}
