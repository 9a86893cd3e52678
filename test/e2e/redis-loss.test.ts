import { seededRandom } from '@tidemark/core';
import { endpoints, LocalRedis } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import { expectSettledOnReference, publishUnderFaults, startFaultRun } from './fault-run.js';
import { sleep } from './reference-check.js';

// Redis lost under load, as an operator meets it: the four services in one process, a Redis of the test's
// own, turns published at a steady rate on every partition, and Redis SIGKILLed and restarted (empty)
// again and again while batches are in flight, then frozen. Every service must rebuild what it kept there
// from the topics, and once quiet every session must hold exactly what the core reference computes (see
// fault-run.ts). Before the compactor's windows were fenced, this jammed sessions for good.
// `pnpm chaos` runs ten losses and a 20 s freeze; the test suite TIDEMARK_REDIS_LOSSES (default 3).

const losses = Number(process.env.TIDEMARK_REDIS_LOSSES ?? 3);
/** After the losses, Redis frozen (SIGSTOP) this long while the load goes on: a hung dependency. */
const freezeMs = Number(process.env.TIDEMARK_REDIS_FREEZE_MS ?? 8_000);
const seed = 20261204;
/** Turns per session per chunk, and the pause between chunks: ≈ 120 turns/s offered over 16 sessions. */
const chunkTurns = 2;
const chunkPauseMs = 250;
/** Chunks between two faults (≈ 6 s of load: the outage, the rebuild and some ordinary work). */
const chunksPerFault = 24;
const turnsPerSession = chunkTurns * chunksPerFault * (losses + 2);

describe('Redis lost under load', () => {
  it(
    `settles on the reference after ${losses} Redis losses with batches in flight and a ${freezeMs / 1000} s freeze`,
    { timeout: 150_000 + losses * 30_000 + freezeMs },
    async () => {
      const { kafkaBrokers, schemaRegistryUrl } = endpoints();
      const local = await LocalRedis.start();
      onTestFinished(() => local.stop());
      const faultRun = await startFaultRun({
        name: 'redis-loss',
        sessions: 16,
        turnsPerSession,
        kafkaBrokers,
        schemaRegistryUrl,
        redisUrl: local.url,
      });
      const { elapsed } = faultRun;
      const random = seededRandom(seed);
      const recoveries: string[] = [];
      // Each loss: SIGKILL while the chunks flow, down for 1–3 s, restarted empty.
      const lose = async (index: number): Promise<void> => {
        await local.kill();
        const at = elapsed();
        await sleep(1_000 + random() * 2_000);
        await local.restart();
        recoveries.push(await faultRun.recovery(`loss ${index + 1} at ${at}, restart`));
      };
      const freeze = async (): Promise<void> => {
        local.freeze();
        const at = elapsed();
        await sleep(freezeMs);
        local.thaw();
        recoveries.push(await faultRun.recovery(`freeze of ${freezeMs / 1000} s at ${at}`));
      };

      const faults = [...Array.from({ length: losses }, (_, i) => () => lose(i)), freeze];
      await publishUnderFaults(faultRun, faults, { chunkTurns, chunkPauseMs, chunksPerFault, random });

      await expectSettledOnReference(faultRun, local.url);
      expect(recoveries.filter((r) => r.includes('never'))).toEqual([]);
      expect(recoveries).toHaveLength(losses + 1);
      console.log(`${elapsed()} done:\n  ${recoveries.join('\n  ')}`);
    },
  );
});
