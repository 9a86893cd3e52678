import { randomUUID } from 'node:crypto';
import type { Projection } from '@tidemark/state';

// Two materializers of one deployment (instances sharing the group) must not rebuild at once. Each
// rebuild starts a new epoch, which makes the other's writes stale and its rebuild start over, and
// resetting the group's offsets needs the group empty, which the other's consumer keeps it from being:
// the two went round for good, neither ever ready (two instances on a fresh deployment, or after a Redis
// loss). One rebuilds while it holds the projection's rebuild lock, from its start until the replay has
// caught up (renewed meanwhile); the others wait, then run on the epoch it built. A holder that dies lets
// the lock lapse, and a waiter takes it and rebuilds from the start.

/** How long a rebuilding materializer holds the lock without renewing it (a dead one's lapses then). */
const rebuildLockMs = 30_000;

/** What to do once the turn came: rebuild (this instance holds the lock), or run on a whole projection. */
export type RebuildTurn = { readonly rebuild: true } | { readonly rebuild: false; readonly epoch: string };

export class RebuildOwnership {
  readonly #projection: Projection;
  readonly #ttlMs: number;
  readonly #owner = randomUUID();
  readonly #onLockError: (error: unknown) => void;
  #renewing: NodeJS.Timeout | null = null;
  #held = false;

  constructor(projection: Projection, onLockError: (error: unknown) => void, ttlMs: number = rebuildLockMs) {
    this.#projection = projection;
    this.#ttlMs = ttlMs;
    this.#onLockError = onLockError;
  }

  /** Waits for this instance's turn to rebuild, or for another's rebuild to finish; null once stopped. */
  async take(stopped: () => boolean, pollMs = 200): Promise<RebuildTurn | null> {
    const { lifecycle } = this.#projection;
    for (;;) {
      if (stopped()) return null;
      // Renewed when already held: a failed attempt keeps the lock for the next one.
      const held =
        (await lifecycle.renewLock(this.#owner, this.#ttlMs)) ||
        (await lifecycle.lock(this.#owner, this.#ttlMs));
      const [epoch, mark] = await Promise.all([this.#projection.epoch(), this.#projection.rebuilding()]);
      const whole = epoch !== null && mark === null;
      this.#held = held;
      if (held && !whole) {
        this.#renewing ??= setInterval(() => {
          lifecycle.renewLock(this.#owner, this.#ttlMs).catch(this.#onLockError);
        }, this.#ttlMs / 3);
        return { rebuild: true };
      }
      // Whole: another instance rebuilt it (meanwhile, or before this one got the lock).
      if (whole) {
        await this.release();
        return { rebuild: false, epoch };
      }
      // Lost (it lapsed) or never held: another instance rebuilds; nothing of ours to renew.
      if (this.#renewing !== null) clearInterval(this.#renewing);
      this.#renewing = null;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  /**
   * Lets the lock go (the rebuild caught up, or the service stops); nothing to do unless held. Waits at
   * most `withinMs` for Redis (a stop must not hang on a Redis that is away: the lock lapses anyway).
   */
  async release(withinMs = 2_000): Promise<void> {
    if (this.#renewing !== null) clearInterval(this.#renewing);
    this.#renewing = null;
    if (!this.#held) return;
    this.#held = false;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#projection.lifecycle.unlock(this.#owner).catch(this.#onLockError),
      new Promise((resolve) => (timer = setTimeout(resolve, withinMs))),
    ]).finally(() => clearTimeout(timer));
  }
}
