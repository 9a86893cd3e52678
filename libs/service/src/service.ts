import type { Logger } from 'pino';
import { createServiceHost, type ReadinessCheck, type ServiceHost } from './host.js';
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

export interface MainOptions {
  readonly name: string;
  readonly port: number;
  readonly host?: string;
  readonly logger: Logger;
  readonly graceMs?: number;
  readonly create: (host: ServiceHost) => Service | Promise<Service>;
}

/**
 * A service's `main.ts` in one call: host, service, HTTP listener, and a graceful shutdown on
 * SIGTERM/SIGINT. A failure to start is logged and exits non-zero.
 */
export async function runMain(options: MainOptions): Promise<ServiceHost> {
  const host = createServiceHost({
    name: options.name,
    port: options.port,
    ...(options.host === undefined ? {} : { host: options.host }),
    logger: options.logger,
  });
  runUntilSignalled(host, options.graceMs);
  try {
    const service = await options.create(host);
    await mountService(host, options.name, service);
    await host.listen();
  } catch (error) {
    options.logger.fatal({ err: error }, `${options.name} failed to start`);
    await host.close();
    process.exitCode = 1;
  }
  return host;
}
