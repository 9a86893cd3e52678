import { randomUUID } from 'node:crypto';
import type { StoreLifecycle } from './store-lifecycle.js';

// Instances of one service share a store and a consumer group, and must not rebuild the store at once.
// Each rebuild starts a new epoch, which makes the other's writes stale and its rebuild start over, and
// resetting the group's offsets needs the group empty, which the other's consumer keeps it from being:
// two materializers went round like that for good, neither ever ready (on a fresh deployment, or after
// a Redis loss). One instance rebuilds while it holds the store's rebuild lock, from before the group
// reset until its replay has caught up (renewed meanwhile); the others wait, then run on the epoch it
// built. A holder that dies lets the lock lapse, and a waiter takes it and rebuilds from the start.
// The same lock as withRebuildLock (store-lifecycle.ts), for a store whose rebuild sets its epoch before
// the replay is over: there the epoch alone cannot tell a waiter that the rebuild is done, so the caller
// says when the store is one to run on (the materializer: whole, no rebuild mark; the compactor: a new
// epoch, since its waiters join the replay), and the holder lets go once its replay caught up.

/** How long a rebuilder holds the lock without renewing it (a dead one's lapses then). */
const rebuildLockMs = 30_000;

/** What to do once the turn came: rebuild (this instance holds the lock), or run on a whole store. */
type RebuildTurn = { readonly rebuild: true } | { readonly rebuild: false; readonly epoch: string };

/** The epoch of a store another instance rebuilt, ready to run on; null while there is none. */
type WholeStore = () => Promise<string | null>;

export class RebuildOwnership {
  readonly #lifecycle: StoreLifecycle;
  readonly #ttlMs: number;
  readonly #owner = randomUUID();
  readonly #onLockError: (error: unknown) => void;
  #renewing: NodeJS.Timeout | null = null;
  #held = false;

  constructor(lifecycle: StoreLifecycle, onLockError: (error: unknown) => void, ttlMs = rebuildLockMs) {
    this.#lifecycle = lifecycle;
    this.#ttlMs = ttlMs;
    this.#onLockError = onLockError;
  }

  /** Waits for this instance's turn to rebuild, or for another's rebuild to finish; null once stopped. */
  async take(stopped: () => boolean, whole: WholeStore, pollMs = 200): Promise<RebuildTurn | null> {
    const lifecycle = this.#lifecycle;
    for (;;) {
      if (stopped()) return null;
      // Renewed when already held: a failed attempt keeps the lock for the next one.
      const held =
        (await lifecycle.renewLock(this.#owner, this.#ttlMs)) ||
        (await lifecycle.lock(this.#owner, this.#ttlMs));
      this.#held = held;
      const epoch = await whole();
      if (epoch !== null) {
        await this.release();
        return { rebuild: false, epoch };
      }
      if (held) {
        this.#renewing ??= setInterval(() => {
          lifecycle.renewLock(this.#owner, this.#ttlMs).catch(this.#onLockError);
        }, this.#ttlMs / 3);
        return { rebuild: true };
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
      this.#lifecycle.unlock(this.#owner).catch(this.#onLockError),
      new Promise((resolve) => (timer = setTimeout(resolve, withinMs))),
    ]).finally(() => clearTimeout(timer));
  }
}
