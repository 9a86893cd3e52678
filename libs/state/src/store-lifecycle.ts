import { unlinkMatching, type RedisClient } from './redis-client.js';
import { luaScript, type StoreLayout } from './keys.js';
import { unexpectedReply } from './replies.js';

// What every rebuildable store shares (the projection, the frames, the plans, the compactor's windows):
// everything in it is derived from a topic, so Redis losing it is survivable, and the epoch says whether
// it still has to be rebuilt. A rebuild drops the epoch first (a writer still on the old one stops
// trusting its writes), clears every session key, and publishes a new epoch last (nobody reads a
// half-rebuilt store). One rebuilder at a time holds the store's lock; the others wait for the epoch.

interface LifecycleCommands {
  tidemarkStoreLock(lockKey: string, op: string, owner: string, ttlMs: number): Promise<number>;
  tidemarkStoreEpoch(epochKey: string, op: string, epoch: string): Promise<string | number | null>;
}

export class StoreLifecycle {
  readonly #redis: RedisClient & LifecycleCommands;
  readonly layout: StoreLayout;

  constructor(redis: RedisClient, layout: StoreLayout) {
    // defineCommand keeps one script per name and connection; every store on a connection shares them.
    redis.defineCommand('tidemarkStoreLock', { numberOfKeys: 1, lua: luaScript('store-lock') });
    redis.defineCommand('tidemarkStoreEpoch', { numberOfKeys: 1, lua: luaScript('store-epoch') });
    this.#redis = redis as RedisClient & LifecycleCommands;
    this.layout = layout;
  }

  /** The store's epoch, or null when it was lost (or never built) and must be rebuilt first. */
  epoch(): Promise<string | null> {
    return this.#redis.get(this.layout.epochKey);
  }

  /** Publishes an epoch unless one is in force; returns the epoch in force (another rebuilder's, if it won). */
  async establishEpoch(epoch: string): Promise<string> {
    const reply = await this.#redis.tidemarkStoreEpoch(this.layout.epochKey, 'establish', epoch);
    if (typeof reply !== 'string') throw unexpectedReply('store-epoch', reply);
    return reply;
  }

  /** Publishes an epoch over whatever is in force (the last step of a rebuild that cleared the store). */
  async setEpoch(epoch: string): Promise<void> {
    await this.#redis.set(this.layout.epochKey, epoch);
  }

  /** Declares the store lost: every reader and writer waits for a rebuild from here on. */
  async dropEpoch(): Promise<void> {
    await this.#redis.tidemarkStoreEpoch(this.layout.epochKey, 'drop', '');
  }

  /** Takes the rebuild lock for `ttlMs`; false when another rebuilder holds it. */
  lock(owner: string, ttlMs: number): Promise<boolean> {
    return this.#lockOp('acquire', owner, ttlMs);
  }

  /** Extends the owner's lock (a long rebuild keeps it); false if it is no longer the owner's. */
  renewLock(owner: string, ttlMs: number): Promise<boolean> {
    return this.#lockOp('renew', owner, ttlMs);
  }

  /** Releases the owner's lock (and nobody else's). */
  async unlock(owner: string): Promise<void> {
    await this.#lockOp('release', owner, 0);
  }

  async #lockOp(op: 'acquire' | 'renew' | 'release', owner: string, ttlMs: number): Promise<boolean> {
    const reply = await this.#redis.tidemarkStoreLock(this.layout.lockKey, op, owner, ttlMs);
    if (reply !== 0 && reply !== 1) throw unexpectedReply('store-lock', reply);
    return reply === 1;
  }

  /**
   * Removes every session key of the store (not its epoch, nor other stores under the prefix); returns
   * how many. A walk with SCAN on every primary, not a script: in a Redis Cluster a script may touch only
   * the keys it is given, and the session keys are spread over every slot (so each key is unlinked on its
   * own there: one command may not span slots).
   */
  async clear(): Promise<number> {
    let removed = 0;
    for (const pattern of this.layout.statePatterns) removed += await unlinkMatching(this.#redis, pattern);
    return removed;
  }

  /** Starts the store over under `epoch`: the old epoch dropped, every session cleared, the new one set. */
  async reset(epoch: string): Promise<number> {
    await this.dropEpoch();
    const removed = await this.clear();
    await this.setEpoch(epoch);
    return removed;
  }
}

export interface RebuildLockOptions {
  readonly owner: string;
  readonly ttlMs: number;
  /** How often a waiting rebuilder looks for the holder's epoch (default 200 ms). */
  readonly pollMs?: number;
  /** Gives up waiting for the holder when this answers true (a stop). */
  readonly cancelled?: () => boolean;
  /** Told when a renewal failed (Redis away): the rebuild goes on; the lock may lapse. */
  readonly onRenewFailed?: (error: unknown) => void;
}

/**
 * Runs `rebuild` holding the store's lock, renewed while it runs, however long the topic is. When another
 * rebuilder holds the lock this waits until the store has an epoch again (answering null) or the
 * holder's lock lapses (then takes it). Also answers null, without rebuilding, when the store has an
 * epoch once the lock is held: someone else rebuilt it in between.
 */
export async function withRebuildLock<T>(
  store: StoreLifecycle,
  options: RebuildLockOptions,
  rebuild: () => Promise<T>,
): Promise<T | null> {
  const { owner, ttlMs } = options;
  for (;;) {
    if ((await store.epoch()) !== null || options.cancelled?.() === true) return null;
    if (await store.lock(owner, ttlMs)) break;
    await sleep(options.pollMs ?? 200);
  }
  const renew = setInterval(
    () => {
      store.renewLock(owner, ttlMs).catch((error: unknown) => options.onRenewFailed?.(error));
    },
    Math.max(50, Math.floor(ttlMs / 3)),
  );
  try {
    if ((await store.epoch()) !== null) return null;
    return await rebuild();
  } finally {
    clearInterval(renew);
    await store.unlock(owner);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
