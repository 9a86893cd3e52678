import { generateSession, type TurnEvent } from '@tidemark/core';
import { untilReady } from '@tidemark/test-infra';
import { describe, expect, it } from 'vitest';
import { expectedWatermarks, expectMatchesFold, harness } from './harness.js';

// Two materializers of one deployment share the group and the projection. Each used to rebuild on its
// own: every rebuild's new epoch made the other's start over, and the group's offsets cannot be reset
// while the other is a member, so on a fresh deployment (and after a Redis loss) neither was ever
// ready. One rebuilds under the projection's rebuild lock; the other waits and runs on its epoch.

describe('two materializers of one group', () => {
  it('both get ready on a fresh deployment and after the projection is lost, on one fold', async () => {
    const h = await harness();
    const sessions = Array.from({ length: 6 }, (_, i) =>
      generateSession(300 + i, { turns: 120, sessionId: `two-${i}` }),
    );
    const turns: TurnEvent[] = [];
    for (let i = 0; i < 120; i++) for (const s of sessions) turns.push(s[i]!);
    await h.publish(turns.slice(0, 360));

    // Started together on a deployment with no projection yet: both find it missing.
    const instances = await Promise.all([h.startMaterializer(), h.startMaterializer()]);
    await untilReady(instances);
    await h.waitForWatermarks(expectedWatermarks(turns.slice(0, 360)));
    const first = await h.projection.epoch();

    // Lost (what FLUSHALL does to this deployment's keys): both notice, one rebuilds.
    await h.redis.del(...(await h.redis.keys(`${h.config.REDIS_PREFIX}*`)));
    await h.publish(turns.slice(360));
    await h.waitForWatermarks(expectedWatermarks(turns), 60_000);
    await Promise.all(instances.map((m) => m.caughtUp(60_000)));
    await untilReady(instances);

    expect(await h.projection.epoch()).not.toBe(first);
    expect(await h.projection.rebuilding()).toBeNull();
    await expectMatchesFold(h.projection, turns, 6);
  });
});
