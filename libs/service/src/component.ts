import type { Logger } from 'pino';
import { createServiceHost, type ReadinessCheck, type ServiceHost } from './host.js';
import { runUntilSignalled } from './shutdown.js';

/** What every service exports from `createX(config)`: started by a host, stopped by it, asked if ready. */
export interface ServiceComponent {
  start(): Promise<void>;
  /** Stops intake, drains, commits what was done and disconnects. Idempotent. */
  stop(): Promise<void>;
  ready(): boolean;
  /**
   * Pings of what it cannot work without (its Redis connection, its Kafka bus), each bounded by a
   * deadline (`dependencyCheck`), by name: mounted as the readiness checks `<component>.<name>`.
   */
  readonly dependencies?: Readonly<Record<string, ReadinessCheck>>;
}

/**
 * Starts a component inside a host: its readiness (and that of its dependencies) joins the host's, and
 * closing the host stops it. Several components may share one host (the all-in-one `pnpm start`).
 */
export async function mountComponent(
  host: ServiceHost,
  name: string,
  component: ServiceComponent,
): Promise<void> {
  host.addReadiness(name, () => component.ready());
  for (const [dependency, check] of Object.entries(component.dependencies ?? {})) {
    host.addReadiness(`${name}.${dependency}`, check);
  }
  host.onShutdown(() => component.stop());
  await component.start();
  host.logger.info({ component: name }, `${name} started`);
}

export interface MainOptions {
  readonly name: string;
  readonly port: number;
  readonly host?: string;
  readonly logger: Logger;
  readonly graceMs?: number;
  readonly create: (host: ServiceHost) => ServiceComponent | Promise<ServiceComponent>;
}

/**
 * A service's `main.ts` in one call: host, component, HTTP listener, and a graceful shutdown on
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
    const component = await options.create(host);
    await mountComponent(host, options.name, component);
    await host.listen();
  } catch (error) {
    options.logger.fatal({ err: error }, `${options.name} failed to start`);
    await host.close();
    process.exitCode = 1;
  }
  return host;
}
