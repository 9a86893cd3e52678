import closeWithGrace from 'close-with-grace';
import type { ServiceHost } from './host.js';

/**
 * Closes the host on SIGTERM or SIGINT (or an uncaught error), within a grace period after which the
 * process exits anyway. A second signal exits at once. Only a process entry point calls this.
 */
export function runUntilSignalled(host: ServiceHost, graceMs = 10_000): void {
  closeWithGrace({ delay: graceMs }, async ({ signal, err }) => {
    if (err !== undefined) host.logger.error({ err }, `${host.name} failed; shutting down`);
    else host.logger.info({ signal }, `${host.name} shutting down`);
    await host.close();
  });
}
