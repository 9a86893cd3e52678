import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';

/** What a process closes on a signal: its host (or whichever host it runs now). */
export interface Closable {
  readonly name: string;
  readonly logger: Logger;
  close(): Promise<void>;
}

/**
 * Closes the host on SIGTERM or SIGINT (or an uncaught error), within a grace period after which the
 * process exits anyway. A second signal exits at once. Only a process entry point calls this. When the
 * process ends by itself (nothing left to run) the exit code it set stands: close-with-grace would exit 0.
 */
export function runUntilSignalled(host: Closable, graceMs = 10_000): void {
  closeWithGrace({ delay: graceMs }, async ({ signal, err }) => {
    if (err !== undefined) host.logger.error({ err }, `${host.name} failed; shutting down`);
    else if (signal !== undefined) host.logger.info({ signal }, `${host.name} shutting down`);
    await host.close();
    const code = Number(process.exitCode ?? 0);
    if (signal === undefined && err === undefined && code !== 0) process.exit(code);
  });
}
