import { mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@tidemark/service';
import { destination as fileDestination, pino, type LevelWithSilent } from 'pino';
import { onTestFailed, onTestFinished } from 'vitest';

// The log of a run that happens in the test's own process (the four services of a fault run), kept as a
// file rather than shown: a fault run logs hundreds of lines a minute at info, which would bury the test's
// progress lines, yet a failing run must leave a trail. One JSON line per entry (pino), one file per run,
// in .local/test-logs/ (gitignored, beside the stack's logs), or TIDEMARK_TEST_LOG_DIR. The level is info,
// or TIDEMARK_TEST_LOG_LEVEL. A failed test names its file on the console.

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface RunLog {
  readonly logger: Logger;
  readonly path: string;
}

/** A logger writing to `<dir>/<run>.log`, flushed when the test finishes. */
export function openRunLog(run: string, service: string): RunLog {
  const dir = process.env.TIDEMARK_TEST_LOG_DIR ?? join(repoRoot, '.local/test-logs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${run}.log`);
  const destination = fileDestination({ dest: path, sync: false });
  const level = (process.env.TIDEMARK_TEST_LOG_LEVEL ?? 'info') as LevelWithSilent;
  const logger = pino(
    { name: service, level, base: { service }, timestamp: pino.stdTimeFunctions.isoTime },
    destination,
  );
  onTestFailed(() => {
    console.log(`the services' log of this run: ${relative(process.cwd(), path)}`);
  });
  // Registered first, so it runs after the cleanups registered later (they run in reverse): their lines
  // are in the file when a failure names it. Not ended: a client closed by a cleanup registered before
  // this one (the test's proxies, its broker) may still log a line, and a write to an ended stream throws.
  onTestFinished(() => destination.flushSync());
  return { logger, path };
}
