import {
  canonicalJson,
  definePolicy,
  foldTurns,
  boundaryQuery,
  seededRandom,
  type Policy,
} from '@tidemark/core';
import {
  demoEnv,
  dropDeployment,
  Journal,
  startPipeline,
  waitUntilReady,
  type Pipeline,
} from '@tidemark/cli';
import { createPublisher, sessionKey } from '@tidemark/contract';
import { createResumeClient } from '@tidemark/resume';
import { generateWorkload } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { endpoints, LocalRedis, uniqueName } from '@tidemark/test-infra';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { RawTap } from './chaos-harness.js';
import { differences, expectationsOf, sleep, until } from './reference-check.js';

// Redis lost under load, as an operator meets it: the four services in one process, a Redis of the test's
// own, turns published at a steady rate on every partition, and Redis SIGKILLed and restarted (empty)
// again and again while batches are in flight. Every service must rebuild what it kept there from the
// topics, and once quiet every session must hold exactly what the core reference computes, resume from
// the reference's marker, and have every turn in the projection once. `pnpm chaos` runs ten losses; the
// test suite runs TIDEMARK_REDIS_LOSSES (default 3).

const losses = Number(process.env.TIDEMARK_REDIS_LOSSES ?? 3);
const seed = 20261204;
const sessions = 16;
const tenantId = 'redis-loss';
/** Turns per session per chunk, and the pause between chunks: ≈ 120 turns/s offered. */
const chunkTurns = 2;
const chunkPauseMs = 250;
/** Chunks between two losses (≈ 6 s of load: the outage, the rebuild and some ordinary work). */
const chunksPerLoss = 24;
/** After the losses, Redis frozen (SIGSTOP) this long while the load goes on: a hung dependency. */
const freezeMs = Number(process.env.TIDEMARK_REDIS_FREEZE_MS ?? 8_000);
const turnsPerSession = chunkTurns * chunksPerLoss * (losses + 2);
const narrativeSessions = new Set([1, 5, 9, 13]);

describe('Redis lost under load', () => {
  it(
    `settles on the reference after ${losses} Redis losses with batches in flight and a ${freezeMs / 1000} s freeze`,
    { timeout: 150_000 + losses * 30_000 + freezeMs },
    async () => {
      const started = Date.now();
      const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
      const { kafkaBrokers, schemaRegistryUrl } = endpoints();
      const local = await LocalRedis.start();
      const run = uniqueName('redis-loss');
      const basePolicy = definePolicy({ l1EveryTurns: 12, digestFanIn: 3 });
      const narrative = definePolicy({ ...basePolicy, summarizer: 'narrative' });
      const policyOf = (index: number): Policy => (narrativeSessions.has(index) ? narrative : basePolicy);
      const workload = generateWorkload({ tenantId, sessions, turns: turnsPerSession, seed: 77 });
      const overrides = Object.fromEntries(
        workload
          .map((turns, index) => [turns, index] as const)
          .filter(([, index]) => narrativeSessions.has(index))
          .map(([turns]) => [sessionKey(tenantId, turns[0]!.sessionId), narrative]),
      );
      const env = await demoEnv(
        {
          KAFKA_BROKERS: kafkaBrokers.join(','),
          SCHEMA_REGISTRY_URL: schemaRegistryUrl,
          REDIS_URL: local.url,
          TOPIC_PREFIX: `${run}.`,
          REDIS_PREFIX: `${run}:`,
          LOG_LEVEL: 'warn',
          L1_EVERY_TURNS: String(basePolicy.l1EveryTurns),
          DIGEST_FAN_IN: String(basePolicy.digestFanIn),
          MAX_REPAIRS: '1',
          POLICY_OVERRIDES: JSON.stringify(overrides),
        },
        [],
      );
      const logger = createLogger('redis-loss', (process.env.TIDEMARK_TEST_LOG_LEVEL ?? 'error') as 'error');
      let pipeline: Pipeline | null = null;
      let journal: Journal | null = null;
      let tap: RawTap | null = null;
      const redis = new Redis(local.url, { maxRetriesPerRequest: null });
      redis.on('error', () => undefined);
      onTestFinished(async () => {
        await pipeline?.stop();
        await journal?.close();
        await tap?.close();
        redis.disconnect();
        await dropDeployment(env);
        await local.stop();
      });

      pipeline = await startPipeline({ env, logger, port: 0 });
      await waitUntilReady(pipeline.host);
      const keys = workload.map((turns) => sessionKey(tenantId, turns[0]!.sessionId));
      journal = await Journal.open(pipeline.bus, keys);
      tap = await RawTap.open(pipeline.bus);
      const decisions = () =>
        keys.reduce((sum, key) => {
          const [t, s] = [tenantId, key.slice(tenantId.length + 1)];
          return sum + journal.session(t, s).decisions.length;
        }, 0);
      console.log(
        `${elapsed()} pipeline ready; ${sessions} sessions × ${turnsPerSession} turns, ${losses} losses`,
      );

      // Each loss: SIGKILL while the chunks flow, down for 1–3 s, restarted empty; the recovery time is from
      // the restart until decisions flow again.
      const random = seededRandom(seed);
      const recoveries: string[] = [];
      const lose = async (index: number): Promise<void> => {
        await local.kill();
        const killedAt = elapsed();
        await sleep(1_000 + random() * 2_000);
        await local.restart();
        const restarted = Date.now();
        const before = decisions();
        const flowing = await until(() => decisions() > before, 60_000);
        const seconds = ((Date.now() - restarted) / 1000).toFixed(1);
        recoveries.push(
          `loss ${index + 1} at ${killedAt}: decisions again ${flowing ? `${seconds} s` : 'never (60 s)'} after the restart`,
        );
      };

      const freeze = async (): Promise<void> => {
        local.freeze();
        const frozenAt = elapsed();
        await sleep(freezeMs);
        local.thaw();
        const thawed = Date.now();
        const before = decisions();
        const flowing = await until(() => decisions() > before, 60_000);
        const seconds = ((Date.now() - thawed) / 1000).toFixed(1);
        recoveries.push(
          `freeze of ${freezeMs / 1000} s at ${frozenAt}: decisions again ${flowing ? `${seconds} s` : 'never (60 s)'} after it ended`,
        );
      };

      const publisher = await createPublisher({
        brokers: kafkaBrokers,
        registryUrl: schemaRegistryUrl,
        clientId: `${run}-publisher`,
        topicPrefix: `${run}.`,
        logger,
      });
      const outages: Promise<void>[] = [];
      try {
        for (let chunk = 0; chunk * chunkTurns < turnsPerSession; chunk++) {
          const from = chunk * chunkTurns;
          await publisher.publishTurns(workload.flatMap((turns) => turns.slice(from, from + chunkTurns)));
          // Mid-way through each stretch of load, with the chunks before it in flight on every partition.
          if (chunk % chunksPerLoss === chunksPerLoss / 2 && outages.length <= losses) {
            await Promise.all(outages);
            outages.push(outages.length < losses ? lose(outages.length) : freeze());
          }
          await sleep(chunkPauseMs * (0.5 + random()));
        }
        await Promise.all(outages);
      } finally {
        await publisher.close();
      }
      console.log(`${elapsed()} all published; ${recoveries.join('; ')}`);

      const total = () => [...tap.positions.values()].reduce((sum, seqs) => sum + seqs.size, 0);
      expect(await until(() => total() === sessions * turnsPerSession, 30_000)).toBe(true);
      const expected = expectationsOf(workload, tap, { policyOf, maxRepairs: 1 });

      const client = createResumeClient({
        redis,
        redisPrefix: `${run}:`,
        bus: pipeline.bus,
        policyFor: (ref) => policyOf(workload.findIndex((turns) => turns[0]!.sessionId === ref.sessionId)),
      });
      onTestFinished(() => client.close());
      const settled = async (e: (typeof expected)[number]): Promise<boolean> => {
        if (differences(journal.session(e.tenantId, e.sessionId), e).length > 0) return false;
        const outcome = await client.resume(e.tenantId, e.sessionId);
        return (
          outcome.ok &&
          outcome.result.markerId === e.planMarker &&
          outcome.result.rawToSeq === turnsPerSession
        );
      };
      const deadline = Date.now() + 90_000;
      let pending = expected;
      while (pending.length > 0 && Date.now() < deadline) {
        const states = await Promise.all(pending.map(settled));
        pending = pending.filter((_, i) => !states[i]);
        if (pending.length > 0) await sleep(500);
      }
      console.log(`${elapsed()} settled: ${expected.length - pending.length}/${expected.length} sessions`);
      // What an unsettled session's stages hold, for whoever reads a failure.
      for (const e of pending) {
        const session = journal.session(e.tenantId, e.sessionId);
        const windowKeys = await redis.keys(`${run}:cmp:*${e.sessionId}*:win`);
        const window =
          windowKeys[0] === undefined
            ? null
            : (JSON.parse((await redis.get(windowKeys[0])) ?? 'null') as {
                lastSeq: number;
                turns: { seq: number }[];
              } | null);
        const watermark = await new Projection(redis, { prefix: `${run}:` }).watermark(
          e.tenantId,
          e.sessionId,
        );
        console.log(
          `unsettled ${e.sessionId} (partition ${tap.positions.get(sessionKey(e.tenantId, e.sessionId))?.get(1)?.partition}): ` +
            `compactions up to seq ${Math.max(0, ...session.compactions.map((c) => c.span.toSeq))}, ` +
            `window lastSeq ${window?.lastSeq ?? 'none'} turns ${window?.turns.map((t) => t.seq).join(',') ?? '-'}, ` +
            `projection applied ${watermark.appliedSeq}; ${differences(session, e).join('; ').slice(0, 200)}`,
        );
      }
      expect(await journal.caughtUp(30_000)).toBe(true);

      for (const e of expected) {
        const session = journal.session(e.tenantId, e.sessionId);
        expect({ session: e.sessionId, problems: differences(session, e) }).toEqual({
          session: e.sessionId,
          problems: [],
        });
        const byId = new Map(e.reference.compactions.map((c) => [c.compactionId, canonicalJson(c)]));
        for (const c of session.compactions)
          expect(canonicalJson(c), c.compactionId).toBe(byId.get(c.compactionId));
        const unverifiable = session.decisions.filter(
          (d) => d.type === 'marker_invalid' && d.violations.some((v) => v.condition === 'unverifiable'),
        );
        expect(
          unverifiable.map((d) => d.markerId),
          'markers decided on missing state',
        ).toEqual([]);
      }

      // Every turn applied once: the projection, rebuilt after each loss, is the fold at every boundary.
      const projection = new Projection(redis, { prefix: `${run}:` });
      for (const e of expected) {
        const watermark = await projection.watermark(e.tenantId, e.sessionId);
        expect({ session: e.sessionId, appliedSeq: watermark.appliedSeq, broken: watermark.broken }).toEqual({
          session: e.sessionId,
          appliedSeq: turnsPerSession,
          broken: null,
        });
        const { fold } = foldTurns(e.tenantId, e.sessionId, e.turns);
        for (const c of e.reference.compactions) {
          const query = boundaryQuery(c);
          expect(await projection.stateAt(query)).toEqual(fold.stateAt(query));
        }
      }
      expect(tap.conflicting()).toEqual([]);
      // No session is left stale: every due compaction was decided.
      for (const e of expected) {
        const outcome = await client.resume(e.tenantId, e.sessionId);
        expect({ session: e.sessionId, stale: outcome.ok ? outcome.result.stale : 'no resume' }).toEqual({
          session: e.sessionId,
          stale: null,
        });
      }
      expect(recoveries.filter((r) => r.includes('never'))).toEqual([]);
      expect(recoveries).toHaveLength(losses + 1);
      console.log(`${elapsed()} done:\n  ${recoveries.join('\n  ')}`);
    },
  );
});
