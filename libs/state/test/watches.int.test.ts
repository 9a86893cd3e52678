import { redisClient } from '@tidemark/test-infra';
import { generateSession, type RegressionWatch, type WatchedStep } from '@tidemark/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Projection } from '../src/projection.js';
import { WatchStore } from '../src/watches.js';

// The regression watches against a real Redis: a resume's watch replaces the last one; which sessions
// have a watch is read in another store's round trip; their watched steps among a batch's signatures in
// one more; a watch expires after its retention.

const a = { tenantId: 'tenant-w', sessionId: 'session-a' };
const b = { tenantId: 'tenant-w', sessionId: 'session-b' };
const nobody = { tenantId: 'tenant-w', sessionId: 'nobody' };
const watch: RegressionWatch = { nodeId: 'node-1', boundarySeq: 40, resumedAtSeq: 52 };

const step = (signature: string, seq: number): WatchedStep => ({
  signature,
  itemId: `call-${signature}`,
  name: 'run_migration',
  detail: null,
  ruledOut: 'failed',
  seq,
});

/** The watching read on its own pipeline (as the projection's apply sends it). */
async function watchesOf(redis: Redis, watches: WatchStore, refs: (typeof a)[]) {
  const pipeline = redis.pipeline();
  const queued = watches.watching(refs).queue(pipeline);
  const replies = (await pipeline.exec())!.map(([, value]) => value);
  expect(replies).toHaveLength(queued.replies);
  return queued.read(replies);
}

describe('WatchStore', () => {
  it('tells which sessions have a watch, and their watched steps among signatures', async () => {
    const { redis, prefix } = redisClient();
    const watches = new WatchStore(redis, { prefix });
    await watches.put(a, watch, [step('s1', 3), step('s2', 9)]);
    await watches.put(b, { ...watch, nodeId: null }, [step('s3', 7)]);
    expect(await watchesOf(redis, watches, [a, b, nobody])).toEqual(
      new Map([
        ['tenant-w/session-a', watch],
        ['tenant-w/session-b', { ...watch, nodeId: null }],
      ]),
    );
    const steps = await watches.steps([
      { ref: a, signatures: ['s2', 'zz'] },
      { ref: b, signatures: ['s1'] },
    ]);
    expect(steps).toEqual(new Map([['tenant-w/session-a', new Map([['s2', step('s2', 9)]])]]));
    expect(await watches.steps([])).toEqual(new Map());
  });

  it('replaces a watch with the next resume, and drops it when there is nothing to watch', async () => {
    const { redis, prefix } = redisClient();
    const watches = new WatchStore(redis, { prefix });
    await watches.put(a, watch, [step('s1', 3)]);
    await watches.put(a, { ...watch, resumedAtSeq: 60 }, [step('s2', 9)]);
    expect((await watchesOf(redis, watches, [a])).get('tenant-w/session-a')).toEqual({
      ...watch,
      resumedAtSeq: 60,
    });
    expect(await watches.steps([{ ref: a, signatures: ['s1', 's2'] }])).toEqual(
      new Map([['tenant-w/session-a', new Map([['s2', step('s2', 9)]])]]),
    );
    await watches.put(a, { ...watch, boundarySeq: 0 }, []);
    expect((await watchesOf(redis, watches, [a])).size).toBe(0);
  });

  it("is read in the projection apply's round trip, after the batch, its replies kept apart", async () => {
    const { redis, prefix } = redisClient();
    const watches = new WatchStore(redis, { prefix });
    const projection = new Projection(redis, { prefix });
    const turns = generateSession(5, { turns: 20, tenantId: a.tenantId, sessionId: a.sessionId }).map(
      (turn, i) => ({ turn, partition: 0, offset: i }),
    );
    await projection.applyBatch(turns.slice(0, 10));
    const epoch = (await projection.epoch())!;
    await watches.put(a, watch, [step('s1', 3)]);
    const applied = await projection.applyBatchInEpoch(epoch, turns.slice(10), watches.watching([a, nobody]));
    expect(applied.ok && applied.outcomes.map((o) => o.result.ok)).toEqual(Array(10).fill(true));
    expect(applied.ok && applied.alongside).toEqual(new Map([['tenant-w/session-a', watch]]));
    expect((await projection.watermark(a.tenantId, a.sessionId)).appliedSeq).toBe(20);
  });

  it('expires a watch after its retention', async () => {
    const { redis, prefix } = redisClient();
    const watches = new WatchStore(redis, { prefix, retentionMs: 60_000 });
    await watches.put(a, watch, [step('s1', 3)]);
    const [key] = await redis.keys(`${prefix}watch:*`);
    const ttl = await redis.pttl(key!);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('keeps a watch without a retention (0, as STATE_RETENTION_MS=0 says), never deleting it at once', async () => {
    const { redis, prefix } = redisClient();
    const watches = new WatchStore(redis, { prefix, retentionMs: 0 });
    await watches.put(a, watch, [step('s1', 3)]);
    const [key] = await redis.keys(`${prefix}watch:*`);
    expect(await redis.pttl(key!)).toBe(-1);
    expect((await watchesOf(redis, watches, [a])).get('tenant-w/session-a')).toEqual(watch);
  });
});
