import { PassThrough } from 'node:stream';
import { canonicalJson, definePolicy, generateSession, runReference, type Compaction } from '@tidemark/core';
import { createLogger, Registry } from '@tidemark/service';
import { describe, expect, it, onTestFinished } from 'vitest';
import { create as createCompactor } from '../src/compactor.js';
import { replay } from '../src/replay.js';
import { replayCommand } from '../src/replay-command.js';
import type { ReplayResult } from '../src/replay.js';
import { collectCompactions, distinct, hasIds, stage } from './harness.js';

const logger = createLogger('replay-test', 'warn');
const version = 'tidemark-compactor/1';

describe('replay', () => {
  it('under the same policy publishes no new id; under a tighter digest budget, a deeper generation, as the reference', async () => {
    const s = await stage();
    const sessions = [0, 1].map((i) => generateSession(60 + i, { turns: 320, sessionId: `replay-${i}` }));
    for (const turns of sessions) await s.publish(turns);
    const referenceOf = (policy: ReturnType<typeof definePolicy>, generation: number) =>
      sessions.flatMap((turns) => {
        const seqs = s.offsets.get(`${turns[0]!.tenantId}/${turns[0]!.sessionId}`)!;
        return runReference(turns, {
          policy,
          generation,
          compactorVersion: version,
          offsetOf: (seq) => seqs.get(seq)!,
        }).compactions;
      });

    // Generation 1, by the service.
    const collected = await collectCompactions(s.bus);
    const compactor = createCompactor(s.config(), { logger, metrics: new Registry() });
    await compactor.run();
    onTestFinished(() => compactor.stop());
    const first = referenceOf(definePolicy(), 1);
    await collected.waitFor(hasIds(first.map((c) => c.compactionId)));
    await compactor.stop();
    const before = distinct(collected.all);

    // The same policy and generation, windows recomputed from nothing (a namespace of its own):
    // everything is published again, and every copy is an existing id with the same bytes.
    const output = new PassThrough();
    let lines = '';
    output.on('data', (chunk: Buffer) => (lines += chunk.toString()));
    const { kafkaBrokers, registryUrl, redisUrl } = {
      kafkaBrokers: s.env().KAFKA_BROKERS!.split(','),
      registryUrl: s.env().SCHEMA_REGISTRY_URL!,
      redisUrl: s.env().REDIS_URL!,
    };
    const again = await replay({
      brokers: kafkaBrokers,
      registryUrl,
      redisUrl,
      topicPrefix: s.topicPrefix,
      redisPrefix: s.redisPrefix,
      policy: definePolicy(),
      generation: 1,
      compactorVersion: version,
      namespace: 'recomputed',
      progress: 'lines',
      output,
      logger,
    });
    expect(again).toMatchObject({ turns: 640, compactions: first.length });
    expect(lines).toMatch(/^replay: turns 640\/640, compactions \d+, \d+ turns\/s$/m);
    await collected.waitFor((all) => all.length >= before.size + first.length);
    expect([...distinct(collected.all).keys()].sort()).toEqual([...before.keys()].sort());

    // Through the command, as `tidemark replay --budget 1000 --generation 2`: a deeper frame.
    let result: ReplayResult | null = null;
    await replayCommand({ ...s.env(), LOG_LEVEL: 'warn' }, (r) => (result = r)).parseAsync(
      ['--budget', '1000', '--generation', '2', '--progress', 'none'],
      { from: 'user' },
    );
    const tight = referenceOf(definePolicy({ digestTokenBudget: 1000 }), 2);
    expect(result).toMatchObject({ turns: 640, compactions: tight.length });
    await collected.waitFor(hasIds(tight.map((c) => c.compactionId)));
    const byId = distinct(collected.all);
    for (const c of tight) expect(canonicalJson(byId.get(c.compactionId))).toBe(canonicalJson(c));
    const depth = (nodes: readonly Compaction[]) => Math.max(...nodes.map((c) => c.tier));
    expect(depth(first)).toBe(2);
    expect(depth(tight)).toBeGreaterThan(depth(first));
    expect([...byId.values()].filter((c) => c.generation === 2)).toHaveLength(tight.length);
  });
});
