import { foldTurns, generateSession, type TurnEvent } from '@tidemark/core';
import { LocalRedisCluster, redisClient } from '@tidemark/test-infra';
import type { Cluster } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  batchOf,
  connectRedis,
  keySlot,
  Projection,
  unlinkMatching,
  type PositionedTurn,
  type RedisClient,
} from '../src/index.js';
import { sessionKeys, sessionTag } from '../src/keys.js';

// The stores on a 3-master Redis Cluster: a batch spans sessions on every master (one pipeline per node),
// each session's keys share a slot (so its scripts run), and what the projection answers is what it
// answers on one Redis, and what core's fold computes.

const sessions = 24;

async function cluster(): Promise<RedisClient> {
  const local = await LocalRedisCluster.start();
  const redis = connectRedis({ REDIS_URL: 'redis://unused', REDIS_CLUSTER_NODES: local.seeds.split(',') });
  onTestFinished(() => redis.disconnect());
  return redis;
}

function workload(): TurnEvent[][] {
  return Array.from({ length: sessions }, (_, i) =>
    generateSession(40 + i, { tenantId: 'cluster', sessionId: `s-${i}`, turns: 30, activity: 0.7 }),
  );
}

/** Every session's turns, interleaved a few at a time, as a consumed batch sees them. */
function interleaved(turns: readonly (readonly TurnEvent[])[], step: number): PositionedTurn[][] {
  const batches: PositionedTurn[][] = [];
  const longest = Math.max(...turns.map((t) => t.length));
  for (let from = 0; from < longest; from += step) {
    batches.push(
      turns.flatMap((t, s) =>
        t.slice(from, from + step).map((turn, i) => ({ turn, partition: s % 4, offset: from + i })),
      ),
    );
  }
  return batches;
}

describe('a Redis Cluster', () => {
  it('places keys where Redis does: keySlot is CLUSTER KEYSLOT', { timeout: 60_000 }, async () => {
    const redis = await cluster();
    const keys = [
      'plain',
      '',
      '{}',
      '{}x',
      'a{b}c',
      'a{}{b}',
      '{only-open',
      'close}{',
      'ünïcødé{tag}',
      sessionKeys('p:', 'tenant', 'session').meta,
      sessionKeys('p:', 'we{ird', 'id}').turns,
      ...Array.from({ length: 40 }, (_, i) => `k:${i * 7919}`),
    ];
    for (const key of keys) {
      expect({ key, slot: keySlot(key) }).toEqual({ key, slot: await redis.cluster('KEYSLOT', key) });
    }
  });

  it('a batch spanning every master answers in the order it was queued', { timeout: 60_000 }, async () => {
    const redis = await cluster();
    const keys = Array.from({ length: 60 }, (_, i) => `batch:{s${i}}`);
    const write = batchOf(redis);
    keys.forEach((key, i) => write.set(key, String(i)).incr(key));
    expect(await write.exec()).toEqual(
      keys.flatMap((_, i) => [
        [null, 'OK'],
        [null, i + 1],
      ]),
    );
    const nodes = new Set(keys.map((key) => (redis as Cluster).slots[keySlot(key)]![0]));
    expect(nodes.size).toBe(3);
    const read = batchOf(redis);
    for (const key of [...keys].reverse()) read.get(key);
    expect((await read.exec())!.map(([, value]) => value)).toEqual(
      keys.map((_, i) => String(i + 1)).reverse(),
    );
    expect(await unlinkMatching(redis, 'batch:*')).toBe(keys.length);
    expect(await redis.exists(...keys.slice(0, 1))).toBe(0);
  });

  it(
    'the projection applies and answers as on one Redis, and as the fold',
    { timeout: 120_000 },
    async () => {
      const turns = workload();
      const onCluster = new Projection(await cluster(), { prefix: 'c:' });
      const { redis: single, prefix } = redisClient();
      const onOne = new Projection(single, { prefix });
      for (const batch of interleaved(turns, 7)) {
        const [a, b] = await Promise.all([onCluster.applyBatch(batch), onOne.applyBatch(batch)]);
        expect(a).toEqual(b);
      }
      for (const session of turns) {
        const { tenantId, sessionId } = session[0]!;
        const { fold } = foldTurns(tenantId, sessionId, session);
        const names = vocabulary(session);
        expect(await onCluster.watermark(tenantId, sessionId)).toEqual(
          await onOne.watermark(tenantId, sessionId),
        );
        for (const toSeq of [1, 12, session.length]) {
          const query = { tenantId, sessionId, fromSeq: 1, toSeq, ...names };
          const state = await onCluster.stateAt(query);
          expect(state).toEqual(await onOne.stateAt(query));
          expect(state).toEqual(fold.stateAt(query));
        }
      }
      // Cleared on every master, as a rebuild does.
      expect(await onCluster.lifecycle.clear()).toBeGreaterThan(sessions);
      expect((await onCluster.watermark('cluster', 's-0')).appliedSeq).toBe(0);
    },
  );
});

// The session tag is what keeps a session's keys on one slot; checked where the Cluster is, too.
it('every key of a session shares its slot', () => {
  const keys = sessionKeys('p:', 't', 's');
  expect(new Set(Object.values(keys).map(keySlot)).size).toBe(1);
  expect(sessionTag({ tenantId: 't', sessionId: 's' })).toBe('{t/s}');
});

/** The item ids, keys and paths a session names: what a boundary query asks about. */
function vocabulary(turns: readonly TurnEvent[]): { itemIds: string[]; itemKeys: string[]; paths: string[] } {
  const itemIds = new Set<string>();
  const itemKeys = new Set<string>();
  const paths = new Set<string>();
  for (const change of turns.flatMap((turn) => turn.changes)) {
    if (change.type === 'item_opened' || change.type === 'item_closed') itemIds.add(change.itemId);
    if (change.type === 'item_disposed') itemKeys.add(change.itemKey);
    if (change.type === 'artifact_recorded') paths.add(change.path);
  }
  return { itemIds: [...itemIds].sort(), itemKeys: [...itemKeys].sort(), paths: [...paths].sort() };
}
