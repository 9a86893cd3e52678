import type { Logger } from 'pino';

// Rebuilding a service's Redis state from the topics (after Redis lost it, or on a first start) is the
// same story in every service: at most one rebuild at a time, retried with backoff until it succeeds
// (a rebuild that gave up would leave the service stopped for good), reported on /readyz while it runs,
// and waited for on stop. What a rebuild does is the service's own; this runs it.

export interface RebuildSupervisor {
  /** Whether a rebuild is under way (the service reports `rebuilding`). */
  readonly running: boolean;
  /**
   * Runs a rebuild for `reason` unless one is under way (then joins it); resolves once an attempt has
   * succeeded, or once stopped. Never rejects: a failed attempt is logged and tried again.
   */
  run(reason: string): Promise<void>;
  /** No further attempts; resolves once the current one has ended. */
  stop(): Promise<void>;
}

export interface RebuildOptions {
  /** What is rebuilt, for the logs ("frame store", "compactor windows"). */
  readonly what: string;
  readonly logger: Logger;
  /** One attempt; `attempt` counts from 1. Throws to be retried. */
  readonly attempt: (reason: string, attempt: number) => Promise<void>;
  /** Undoes what a failed attempt left half done (a consumer it started), before the next one. */
  readonly afterFailure?: () => Promise<void>;
  /** Backoff between attempts (default 500 ms, doubling to 10 s). */
  readonly retryMinMs?: number;
  readonly retryMaxMs?: number;
}

export function superviseRebuild(options: RebuildOptions): RebuildSupervisor {
  const { logger, what } = options;
  let current: Promise<void> | null = null;
  let stopped = false;
  let wake: (() => void) | null = null;

  const pause = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const attempts = async (reason: string): Promise<void> => {
    const began = Date.now();
    let delay = options.retryMinMs ?? 500;
    for (let attempt = 1; !stopped; attempt++) {
      try {
        await options.attempt(reason, attempt);
        if (!stopped)
          logger.info({ rebuilt: what, reason, attempt, ms: Date.now() - began }, `${what} rebuilt`);
        return;
      } catch (error) {
        logger.warn(
          { err: error, rebuilt: what, attempt, retryInMs: delay },
          `rebuilding the ${what} failed; retrying`,
        );
        await options.afterFailure?.().catch(() => undefined);
        await pause(delay);
        delay = Math.min(delay * 2, options.retryMaxMs ?? 10_000);
      }
    }
  };

  return {
    get running() {
      return current !== null;
    },
    run(reason) {
      if (stopped) return Promise.resolve();
      current ??= attempts(reason).finally(() => {
        current = null;
      });
      return current;
    },
    async stop() {
      stopped = true;
      wake?.();
      await current;
    },
  };
}
