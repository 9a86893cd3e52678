import { seededRandom } from '@tidemark/core';
import { endpoints, LocalKafka } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import { expectSettledOnReference, publishUnderFaults, startFaultRun } from './fault-run.js';
import { sleep } from './reference-check.js';

// The broker lost under load: the four services in one process on a broker of the test's own (the
// shared registry and Redis), turns published at a steady rate on every partition, the broker SIGKILLed
// and restarted on its data (topics and committed offsets kept, as a real restart), then frozen
// (SIGSTOP). The publisher rejects while the broker is away, and the run republishes after 1 s, as the
// publisher's contract asks of a runtime. Once quiet, every session must hold exactly what the core
// reference computes (see fault-run.ts). `pnpm chaos` freezes it 20 s; the suite TIDEMARK_BROKER_FREEZE_MS.

const freezeMs = Number(process.env.TIDEMARK_BROKER_FREEZE_MS ?? 8_000);
/** How long the killed broker stays down before it is restarted. */
const downMs = 5_000;
const seed = 20261205;
const chunkTurns = 2;
const chunkPauseMs = 250;
const chunksPerFault = 30;
const turnsPerSession = chunkTurns * chunksPerFault * 3;

describe('the broker lost under load', () => {
  it(
    `settles on the reference after a broker kill and restart and a ${freezeMs / 1000} s freeze`,
    { timeout: 300_000 + freezeMs },
    async () => {
      const { schemaRegistryUrl, redisUrl } = endpoints();
      const kafka = await LocalKafka.start();
      onTestFinished(() => kafka.stop());
      const faultRun = await startFaultRun({
        name: 'broker-faults',
        sessions: 16,
        turnsPerSession,
        kafkaBrokers: kafka.brokers,
        schemaRegistryUrl,
        redisUrl,
      });
      const { elapsed } = faultRun;
      const random = seededRandom(seed);
      const recoveries: string[] = [];
      const restart = async (): Promise<void> => {
        await kafka.kill();
        const at = elapsed();
        await sleep(downMs);
        await kafka.restart();
        recoveries.push(
          await faultRun.recovery(
            `SIGKILL at ${at}, restart begun ${downMs / 1000} s later (port open ${elapsed()})`,
          ),
        );
      };
      const freeze = async (): Promise<void> => {
        kafka.freeze();
        const at = elapsed();
        await sleep(freezeMs);
        kafka.thaw();
        recoveries.push(await faultRun.recovery(`freeze of ${freezeMs / 1000} s at ${at}`));
      };

      const faults = [restart, freeze];
      await publishUnderFaults(faultRun, faults, { chunkTurns, chunkPauseMs, chunksPerFault, random });

      await expectSettledOnReference(faultRun, redisUrl);
      expect(recoveries.filter((r) => r.includes('never'))).toEqual([]);
      expect(recoveries).toHaveLength(faults.length);
      console.log(`${elapsed()} done:\n  ${recoveries.join('\n  ')}`);
    },
  );
});
