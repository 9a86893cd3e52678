import type { LevelWithSilent, Logger } from 'pino';
import { Registry } from 'prom-client';
import type { z } from 'zod';
import { parseConfig } from './config.js';
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
}

/**
 * A service's `main.ts` in one call: its configuration parsed from the environment, a host (/healthz,
 * /readyz, /metrics on HTTP_PORT), the service, and a graceful shutdown on SIGTERM/SIGINT. A bad
 * configuration or a failure to start is logged and exits non-zero.
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
  const logger = createLogger(name, config.LOG_LEVEL);
  const host = createServiceHost({ name, port: config.HTTP_PORT, host: config.HTTP_HOST, logger });
  runUntilSignalled(host, config.SHUTDOWN_GRACE_MS);
  try {
    await mountService(host, name, await create(config, host));
    await host.listen();
  } catch (error) {
    logger.fatal({ err: error }, `${name} failed to start`);
    await host.close();
    process.exitCode = 1;
  }
  return host;
}
