import { definePolicy, generateSession, runReference, type TurnEvent } from '@tidemark/core';
import { createLogger, Registry } from '@tidemark/service';
import { untilReady } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import { create as createCompactor } from '../src/compactor.js';
import { collectCompactions, distinct, hasIds, stage } from './harness.js';

// Two compactors of one deployment share the group and the windows. When Redis loses the windows, the
// instance that notices rebuilds them from turns.l0, and resetting the group's offsets needs the group
// empty: the other instance has to notice too and step out, and must not start a second rebuild once the
// first is replaying (its group reset would then wait for good on the first's consumer, and it would
// never be ready again). One rebuilds under the windows' rebuild lock; the other waits and runs on its
// epoch.

const logger = createLogger('compactor-test', 'warn');

describe('two compactors of one group', () => {
  it('both get ready again after Redis loses the windows, and publish the reference compactions', async () => {
    const s = await stage();
    const policy = definePolicy({ l1EveryTurns: 20, digestFanIn: 2 });
    const sessions = Array.from({ length: 4 }, (_, i) =>
      generateSession(400 + i, { turns: 120, sessionId: `two-cmp-${i}` }),
    );
    const references = sessions.map((turns) => runReference(turns, { policy, compactorVersion: 'v1' }));
    const collected = await collectCompactions(s.bus);
    const config = s.config({ L1_EVERY_TURNS: '20', DIGEST_FAN_IN: '2', COMPACTOR_VERSION: 'v1' });
    const instances = await Promise.all(
      [0, 1].map(async () => {
        const compactor = createCompactor(config, { logger, metrics: new Registry() });
        await compactor.run();
        onTestFinished(() => compactor.stop());
        return compactor;
      }),
    );
    const interleaved = (from: number, to: number): TurnEvent[] =>
      Array.from({ length: to - from }, (_, i) => sessions.map((turns) => turns[from + i]!)).flat();
    await s.publish(interleaved(0, 50));
    await untilReady(instances);
    const early = references.flatMap((r) => r.compactions.filter((c) => c.span.toSeq <= 50));
    await collected.waitFor(hasIds(early.map((c) => c.compactionId)));

    // Redis loses the compactors' keys while turns keep coming, a few at a time.
    const keys = await s.redis.keys(`${s.redisPrefix}cmp:*`);
    expect(keys.length).toBeGreaterThan(0);
    await s.redis.del(...keys);
    for (let from = 50; from < 120; from += 10) {
      await s.publish(interleaved(from, from + 10));
      await new Promise((resolve) => setTimeout(resolve, 300));
    }

    const all = references.flatMap((r) => r.compactions);
    await collected.waitFor(hasIds(all.map((c) => c.compactionId)), 90_000);
    await untilReady(instances, 60_000);
    expect([...distinct(collected.all).keys()].sort()).toEqual(all.map((c) => c.compactionId).sort());
  });
});
