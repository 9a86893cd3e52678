import { redisClient } from '@tidemark/test-infra';
import { describe, expect, it } from 'vitest';
import {
  framesLayout,
  plansLayout,
  projectionLayout,
  sessionStoreKey,
  windowsLayout,
  type StoreLayout,
} from '../src/keys.js';
import { StoreLifecycle, withRebuildLock } from '../src/store-lifecycle.js';

// The lifecycle every rebuildable store shares, against a real Redis: the epoch, the rebuild lock, and
// a clear that removes exactly one store's sessions.

const session = { tenantId: 'tenant/with-slash', sessionId: 'session*1' };

function lifecycle(layoutOf: (prefix: string) => StoreLayout = framesLayout) {
  const { redis, prefix } = redisClient();
  return { redis, prefix, store: new StoreLifecycle(redis, layoutOf(prefix)) };
}

describe('StoreLifecycle', () => {
  it('establishes an epoch once: a second rebuilder gets the first one back', async () => {
    const { store } = lifecycle();
    expect(await store.epoch()).toBeNull();
    expect(await store.establishEpoch('e1')).toBe('e1');
    expect(await store.establishEpoch('e2')).toBe('e1');
    await store.dropEpoch();
    expect(await store.epoch()).toBeNull();
    await store.setEpoch('e3');
    expect(await store.epoch()).toBe('e3');
  });

  it('takes the rebuild lock once, and only its owner renews or releases it', async () => {
    const { store } = lifecycle();
    expect(await store.lock('a', 10_000)).toBe(true);
    expect(await store.lock('b', 10_000)).toBe(false);
    await store.unlock('b');
    expect(await store.lock('b', 10_000)).toBe(false);
    expect(await store.renewLock('b', 10_000)).toBe(false);
    expect(await store.renewLock('a', 20_000)).toBe(true);
    await store.unlock('a');
    expect(await store.lock('b', 10_000)).toBe(true);
  });

  it('lets a lock whose holder died lapse', async () => {
    const { store } = lifecycle();
    expect(await store.lock('dead', 50)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await store.lock('next', 10_000)).toBe(true);
  });

  it('clears its own sessions only: not its epoch, not another store, not another prefix', async () => {
    const { redis, prefix, store } = lifecycle(plansLayout);
    const other = new StoreLifecycle(redis, framesLayout(prefix));
    await store.setEpoch('e1');
    const own = ['resume', 'resume-nodes', 'resume-ctx'].map((name) =>
      sessionStoreKey(prefix, name, session),
    );
    const kept = [
      sessionStoreKey(prefix, 'frame', session),
      sessionStoreKey(`${prefix}x`, 'resume', session),
      `${prefix}resume:not-a-session`,
    ];
    for (const key of [...own, ...kept]) await redis.set(key, '1');
    expect(await store.clear()).toBe(own.length);
    expect(await redis.exists(...own)).toBe(0);
    expect(await redis.exists(...kept)).toBe(kept.length);
    expect(await store.epoch()).toBe('e1');
    expect(await other.clear()).toBe(1);
  });

  it('resets under a new epoch, removing everything the old one wrote', async () => {
    const { redis, prefix, store } = lifecycle((p) => windowsLayout(p, 'g1:policy-[a]'));
    await store.setEpoch('e1');
    await redis.set(`${sessionStoreKey(prefix, 'cmp:g1:policy-[a]', session)}:win`, '{}');
    expect(await store.reset('e2')).toBe(1);
    expect(await store.epoch()).toBe('e2');
  });

  it('rebuilds under the lock once; a second rebuilder waits for the epoch and does nothing', async () => {
    const { redis, prefix, store } = lifecycle(projectionLayout);
    const second = new StoreLifecycle(redis, projectionLayout(prefix));
    let rebuilt = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = withRebuildLock(store, { owner: 'a', ttlMs: 10_000, pollMs: 10 }, async () => {
      rebuilt += 1;
      await held;
      await store.setEpoch('built-by-a');
      return 'a';
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    const waiting = withRebuildLock(second, { owner: 'b', ttlMs: 10_000, pollMs: 10 }, () => {
      rebuilt += 1;
      return Promise.resolve('b');
    });
    release();
    expect(await first).toBe('a');
    expect(await waiting).toBeNull();
    expect(rebuilt).toBe(1);
    // The lock was released: a later rebuild (after another loss) may take it.
    expect(await store.lock('c', 10_000)).toBe(true);
  });
});
