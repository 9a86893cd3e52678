import { generateSession } from '@tidemark/core';
import { redisClient } from '@tidemark/test-infra';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { WindowMovedError, WindowsLostError, WindowStore } from '../src/windows.js';

// The window store's fence: a batch writes its windows only over the windows it loaded, so a batch in
// flight across a Redis loss or a rebuild writes nothing; and a window without its turns is lost state.

const ref = { tenantId: 'acme', sessionId: 'fenced' };
const turns = generateSession(5, { turns: 4, ...ref });
/** The compactor's window, as far as the store is concerned: opaque JSON of a session. */
interface TestWindow {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly lastSeq: number;
  readonly turns: readonly { readonly seq: number }[];
}
const windowWith = (seqs: readonly number[]): TestWindow => ({
  ...ref,
  lastSeq: Math.max(0, ...seqs),
  turns: seqs.map((seq) => ({ seq })),
});
const windowStore = (redis: Redis, prefix: string, namespace = 'g1:test') =>
  new WindowStore<TestWindow>(redis, { prefix, namespace });

describe('the window store', () => {
  it('writes a window over the one its batch loaded, and refuses a batch whose window changed since', async () => {
    const { redis, prefix } = redisClient();
    const store = windowStore(redis, prefix);
    await store.lifecycle.reset('epoch-1');
    const first = await store.loadWindows([ref]);
    await store.commit([
      { window: windowWith([1, 2]), loaded: first.versions[0]!, added: turns.slice(0, 2), dropped: [] },
    ]);

    // Two batches computed from the same window: the first to commit wins, the second is refused whole.
    const loaded = await store.loadWindows([ref]);
    expect(loaded.windows[0]!.lastSeq).toBe(2);
    await store.commit([
      { window: windowWith([1, 2, 3]), loaded: loaded.versions[0]!, added: [turns[2]!], dropped: [] },
    ]);
    await expect(
      store.commit([
        { window: windowWith([1, 2, 4]), loaded: loaded.versions[0]!, added: [turns[3]!], dropped: [] },
      ]),
    ).rejects.toBeInstanceOf(WindowMovedError);
    const after = await store.loadWindows([ref]);
    expect(after.windows[0]!.turns.map((t) => t.seq)).toEqual([1, 2, 3]);
    expect((await store.loadTurns(ref, [1, 2, 3])).map((t) => t.seq)).toEqual([1, 2, 3]);
  });

  it('writes nothing into a Redis that lost the window a batch was computed from', async () => {
    const { redis, prefix } = redisClient();
    const store = windowStore(redis, prefix);
    await store.lifecycle.reset('epoch-1');
    await store.commit([{ window: windowWith([1, 2]), loaded: '', added: turns.slice(0, 2), dropped: [] }]);
    const loaded = await store.loadWindows([ref]);
    // Redis loses everything (and a rebuild starts the namespace over) while the batch is in flight.
    await store.lifecycle.reset('epoch-2');
    await expect(
      store.commit([
        { window: windowWith([2, 3]), loaded: loaded.versions[0]!, added: [turns[2]!], dropped: [1] },
      ]),
    ).rejects.toBeInstanceOf(WindowMovedError);
    expect(await redis.keys(`${prefix}cmp:g1:test:{*`)).toEqual([]);
  });

  it('deletes every key of the namespace when it starts over, and only those', async () => {
    const { redis, prefix } = redisClient();
    const store = windowStore(redis, prefix);
    const other = windowStore(redis, prefix, 'g2:other');
    await store.lifecycle.reset('epoch-1');
    await other.lifecycle.reset('epoch-1');
    await store.commit([{ window: windowWith([1]), loaded: '', added: [turns[0]!], dropped: [] }]);
    await other.commit([{ window: windowWith([1]), loaded: '', added: [turns[0]!], dropped: [] }]);
    expect(await store.lifecycle.reset('epoch-2')).toBe(1); // the session's hash: window and turns
    expect((await store.loadWindows([ref])).windows[0]).toBeNull();
    expect((await other.loadWindows([ref])).windows[0]!.lastSeq).toBe(1);
  });

  it('treats a window whose turns are gone as lost state, not as a batch to retry', async () => {
    const { redis, prefix } = redisClient();
    const store = windowStore(redis, prefix);
    await store.lifecycle.reset('epoch-1');
    await store.commit([{ window: windowWith([1, 2]), loaded: '', added: turns.slice(0, 2), dropped: [] }]);
    await redis.hdel(`${prefix}cmp:g1:test:{acme/fenced}`, 't:1');
    await expect(store.loadTurns(ref, [1, 2])).rejects.toBeInstanceOf(WindowsLostError);
  });

  it('keeps the bodies of the nodes a window names, drops those it stops naming, and treats a missing one as lost state', async () => {
    const { redis, prefix } = redisClient();
    const store = windowStore(redis, prefix);
    await store.lifecycle.reset('epoch-1');
    const body = (id: string) => ({ id, summary: 'x'.repeat(4_000) });
    await store.commit([
      {
        window: windowWith([1]),
        loaded: '',
        added: [turns[0]!],
        dropped: [],
        nodes: {
          added: [
            ['n1', body('n1')],
            ['n2', body('n2')],
          ],
          dropped: [],
        },
      },
    ]);
    expect(await store.loadNodes(ref, ['n2', 'n1'])).toEqual([body('n2'), body('n1')]);
    // The window stays small: the bodies are beside it.
    expect(await redis.hstrlen(`${prefix}cmp:g1:test:{acme/fenced}`, 'w')).toBeLessThan(200);

    const loaded = await store.loadWindows([ref]);
    await store.commit([
      {
        window: windowWith([2]),
        loaded: loaded.versions[0]!,
        added: [turns[1]!],
        dropped: [1],
        nodes: { added: [['n3', body('n3')]], dropped: ['n1'] },
      },
    ]);
    // One hash per session: the window, its turns (t:) and the nodes it names (n:).
    expect((await redis.hkeys(`${prefix}cmp:g1:test:{acme/fenced}`)).sort()).toEqual([
      'n:n2',
      'n:n3',
      't:2',
      'w',
    ]);
    await expect(store.loadNodes(ref, ['n1'])).rejects.toBeInstanceOf(WindowsLostError);
  });
});
