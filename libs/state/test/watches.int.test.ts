import { redisClient } from '@tidemark/test-infra';
import type { RegressionWatch, WatchedStep } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { WatchStore } from '../src/watches.js';

// The regression watches against a real Redis: a resume's watch replaces the last one, a batch's
// signatures of many sessions are matched in one round trip, and a watch expires after its retention.

const a = { tenantId: 'tenant-w', sessionId: 'session-a' };
const b = { tenantId: 'tenant-w', sessionId: 'session-b' };
const watch: RegressionWatch = { nodeId: 'node-1', boundarySeq: 40, resumedAtSeq: 52 };

const step = (signature: string, seq: number): WatchedStep => ({
  signature,
  itemId: `call-${signature}`,
  name: 'run_migration',
  detail: null,
  ruledOut: 'failed',
  seq,
});

describe('WatchStore', () => {
  it('matches the watched signatures of many sessions at once, and nothing unwatched', async () => {
    const { redis, prefix } = redisClient();
    const watches = new WatchStore(redis, { prefix });
    await watches.put(a, watch, [step('s1', 3), step('s2', 9)]);
    await watches.put(b, { ...watch, nodeId: null }, [step('s3', 7)]);
    const found = await watches.match([
      { ref: a, signatures: ['s2', 'zz'] },
      { ref: b, signatures: ['s1'] },
      { ref: { ...a, sessionId: 'nobody' }, signatures: ['s1'] },
    ]);
    expect([...found.keys()]).toEqual(['tenant-w/session-a']);
    expect(found.get('tenant-w/session-a')).toEqual({ watch, steps: new Map([['s2', step('s2', 9)]]) });
    expect(await watches.match([])).toEqual(new Map());
  });

  it('replaces a watch with the next resume, and drops it when there is nothing to watch', async () => {
    const { redis, prefix } = redisClient();
    const watches = new WatchStore(redis, { prefix });
    await watches.put(a, watch, [step('s1', 3)]);
    await watches.put(a, { ...watch, resumedAtSeq: 60 }, [step('s2', 9)]);
    const found = await watches.match([{ ref: a, signatures: ['s1', 's2'] }]);
    expect(found.get('tenant-w/session-a')).toEqual({
      watch: { ...watch, resumedAtSeq: 60 },
      steps: new Map([['s2', step('s2', 9)]]),
    });
    await watches.put(a, { ...watch, boundarySeq: 0 }, []);
    expect((await watches.match([{ ref: a, signatures: ['s2'] }])).size).toBe(0);
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
});
