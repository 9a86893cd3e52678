import { seededRandom } from '@tidemark/core';
import { endpoints, freePort, LocalKafka, LocalRedis, startFaultProxy } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import { expectSettledOnReference, publishUnderFaults, startFaultRun } from './fault-run.js';
import { sleep } from './reference-check.js';

// The network between the services and their dependencies, faulted: the four services in one process
// reach a broker and a Redis of the test's own only through TCP fault proxies on loopback (the broker
// advertises its proxy, so metadata leads clients back through it), while turns are published at a
// steady rate. Added latency both ways, every connection dropped (reset) twice, the first time in the
// middle of a response, then a partition (connections open, nothing through) of both at once. Once
// quiet, every session must hold exactly what the core reference computes (fault-run.ts). `pnpm chaos`
// holds the partition longer.

const partitionMs = Number(process.env.TIDEMARK_PARTITION_MS ?? 30_000);
const latencyMs = 150;
const latencyForMs = 8_000;
const seed = 20261206;
const chunkTurns = 2;
const chunkPauseMs = 250;
const chunksPerFault = 24;
const turnsPerSession = chunkTurns * chunksPerFault * 4;

describe('network faults between the services and Kafka and Redis', () => {
  it(
    `settle on the reference after ${latencyMs} ms of latency, dropped connections and a ${partitionMs / 1000} s partition`,
    { timeout: 300_000 + partitionMs },
    async () => {
      const { schemaRegistryUrl } = endpoints();
      const [proxiedPort, advertisedPort] = [await freePort(), await freePort()];
      const [kafka, redis] = await Promise.all([
        LocalKafka.start({ proxied: { port: proxiedPort, advertisedPort } }),
        LocalRedis.start(),
      ]);
      const kafkaProxy = await startFaultProxy({ host: '127.0.0.1', port: proxiedPort }, advertisedPort);
      const redisProxy = await startFaultProxy({ host: '127.0.0.1', port: redis.port });
      onTestFinished(async () => {
        await kafkaProxy.close();
        await redisProxy.close();
        await kafka.stop();
        await redis.stop();
      });
      const proxies = [kafkaProxy, redisProxy];
      const faultRun = await startFaultRun({
        name: 'network-faults',
        sessions: 16,
        turnsPerSession,
        kafkaBrokers: [kafkaProxy.address],
        schemaRegistryUrl,
        redisUrl: `redis://${redisProxy.address}`,
      });
      const { elapsed } = faultRun;
      const random = seededRandom(seed);
      const recoveries: string[] = [];
      const latency = async (): Promise<void> => {
        for (const proxy of proxies) proxy.delay(latencyMs);
        const at = elapsed();
        await sleep(latencyForMs);
        for (const proxy of proxies) proxy.delay(0);
        recoveries.push(
          await faultRun.recovery(`${latencyMs} ms each way for ${latencyForMs / 1000} s at ${at}`),
        );
      };
      const drops = async (): Promise<void> => {
        const at = elapsed();
        // The first time in the middle of a response (a Fetch, a Redis reply): a client must not be left
        // reading the new connection's bytes after the cut ones.
        for (const proxy of proxies) proxy.cut();
        await sleep(1_000);
        for (const proxy of proxies) proxy.drop();
        recoveries.push(
          await faultRun.recovery(`every connection dropped at ${at} (mid-response) and 1 s later`),
        );
      };
      const partition = async (): Promise<void> => {
        for (const proxy of proxies) proxy.freeze();
        const at = elapsed();
        await sleep(partitionMs);
        for (const proxy of proxies) proxy.restore();
        recoveries.push(await faultRun.recovery(`partition of ${partitionMs / 1000} s at ${at}`));
      };

      const faults = [latency, drops, partition];
      await publishUnderFaults(faultRun, faults, { chunkTurns, chunkPauseMs, chunksPerFault, random });

      await expectSettledOnReference(faultRun, redis.url);
      expect(recoveries.filter((r) => r.includes('never'))).toEqual([]);
      expect(recoveries).toHaveLength(faults.length);
      console.log(`${elapsed()} done:\n  ${recoveries.join('\n  ')}`);
    },
  );
});
