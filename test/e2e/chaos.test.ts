import { Journal } from '@tidemark/cli';
import { ContractError, createPublisher, sessionKey } from '@tidemark/contract';
import { seededRandom, type TurnEvent } from '@tidemark/core';
import { createResumeClient, type ResumeLibraryClient } from '@tidemark/resume';
import { generateWorkload } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { endpoints, LocalKafka, LocalRedis } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  closeAdmin,
  killHard,
  provisionProcessDeployment,
  RawTap,
  ready,
  serviceNames,
  shuffled,
  uncommitted,
  type ServiceName,
} from './chaos-harness.js';
import {
  differences,
  expectationsOf,
  expectOnReference,
  sleep,
  until,
  untilSettled,
  expectProjectionIsTheFold,
} from './reference-check.js';

// The design's first reliability claim, end to end: the four services as separate processes, SIGKILLed
// one at a time on a seeded random schedule while a workload is published, and restarted; each kill lands
// while the service has work it has not committed (records of its topics its groups have not committed,
// checked at the moment of the kill: an idle service is not killed, the kill waits for the next chunk).
// A third in, Redis is FLUSHALLed (every store rebuilds from the topics; TIDEMARK_CHAOS_FLUSH=0 leaves
// it out); two thirds in, the broker is SIGKILLed and restarted on its data. A broker and a Redis of the test's own. Once all of them run again and the
// pipeline is quiet, every session must hold exactly what the core reference (a run without faults)
// computes — every compaction id, a decision for every marker, the same trusted markers, the same resume
// plan — with no turn lost from the projection, and every duplicate on the topics byte-identical, so the
// journal (which keeps one copy) and the resume plan see each thing once.
// `pnpm chaos --kills N` runs N kills (the suite: TIDEMARK_CHAOS_KILLS, default 20).

const seed = 20261203;
const kills = Number(process.env.TIDEMARK_CHAOS_KILLS ?? 20);
const sessions = 12;
/** Turns per session in each published chunk. */
const chunkTurns = 4;
/**
 * Three chunks per kill: a kill waits for a chunk whose work some service holds (none while the broker is
 * away, or while every group has caught up: with two, a faster pipeline left a run at 18 of 20 kills),
 * and the quiet after the last kill.
 */
const chunks = 3 * kills;
const turnsPerSession = chunkTurns * chunks;
/** The chunk after which Redis is flushed, and the one after which the broker is killed. */
const flushAfter = process.env.TIDEMARK_CHAOS_FLUSH === '0' ? -1 : Math.floor(kills / 3);
const brokerKillAfter = Math.floor((2 * kills) / 3);
/** How long a kill waits for its victim to hold uncommitted work before it waits for the next chunk. */
const workWaitMs = 3_000;
/** Sessions compacted by the lossy narrative summarizer, so validator invalidations and repairs happen. */
const narrativeSessions = new Set([1, 4, 7, 10]);
const tenantId = 'chaos';

describe('SIGKILL chaos across the four services, a broker kill (and a Redis flush)', () => {
  it(
    `settles on the reference after ${kills} kills on uncommitted work${flushAfter < 0 ? '' : ', a FLUSHALL'} and a broker restart`,
    { timeout: 300_000 + kills * 8_000 },
    async () => {
      const started = Date.now();
      const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
      const { schemaRegistryUrl } = endpoints();
      const [kafka, localRedis] = await Promise.all([LocalKafka.start(), LocalRedis.start()]);
      onTestFinished(async () => {
        await kafka.stop();
        await localRedis.stop();
      });
      const workload = generateWorkload({ tenantId, sessions, turns: turnsPerSession, seed: 900 });
      const deployment = await provisionProcessDeployment({
        name: 'chaos',
        workload,
        lossy: narrativeSessions,
        kafkaBrokers: kafka.brokers,
        redisUrl: localRedis.url,
        // A restarted service leaves as the member it replaces: its partitions come back in seconds.
        env: { INSTANCE_ID: 'chaos' },
      });
      const { run, topicPrefix, redisPrefix, bus, redis, live, unexpected, launch, policyOf } = deployment;
      // The kill schedule: every service in a seeded order, again and again.
      const random = seededRandom(seed);
      const schedule: ServiceName[] = [];
      while (schedule.length < kills) schedule.push(...shuffled(serviceNames, random));
      schedule.length = kills;
      console.log(`chaos seed ${seed} (${run}): kills ${schedule.join(', ')}`);

      const logger = createLogger('chaos', 'error');
      const clients: ResumeLibraryClient[] = [];
      let journal: Journal | null = null;
      let tap: RawTap | null = null;
      onTestFinished(async () => {
        await Promise.all(clients.map((c) => c.close()));
        await journal?.close();
        await tap?.close();
        await closeAdmin(deployment);
        await deployment.close();
      });

      // Downstream first, as startPipeline does; all four ready before the first turn.
      for (const name of [...serviceNames].reverse()) launch(name);
      await Promise.all([...live.values()].map((p) => ready(p, 60_000)));
      console.log(`${elapsed()} all four services ready`);
      journal = await Journal.open(
        bus,
        workload.map((turns) => sessionKey(turns[0]!.tenantId, turns[0]!.sessionId)),
      );
      tap = await RawTap.open(bus);

      const publisher = await createPublisher({
        brokers: kafka.brokers,
        registryUrl: schemaRegistryUrl,
        clientId: `${run}-publisher`,
        topicPrefix,
        logger,
      });
      // What the publisher's contract asks of a runtime: a retriable rejection (the broker away) is
      // answered by publishing the same turns again, after a pause.
      let rejections = 0;
      const publish = async (turns: readonly TurnEvent[]): Promise<void> => {
        for (;;) {
          try {
            await publisher.publishTurns(turns);
            return;
          } catch (error) {
            if (!(error instanceof ContractError) || !error.retriable) throw error;
            rejections++;
            await sleep(1_000);
          }
        }
      };

      // Publish in chunks, round-robin over the sessions. While a chunk travels through the pipeline the
      // next service of the schedule is killed, as soon as its groups hold records they have not
      // committed, and restarted at once or after a moment, so the chunks after it arrive while it starts.
      let published = 0;
      const killed: string[] = [];
      const victims = new Set<ServiceName>();
      const recoveries: Promise<string>[] = [];
      const faults: string[] = [];
      try {
        for (let step = 0; step < chunks; step++) {
          const from = step * chunkTurns;
          const chunk = workload.flatMap((turns) => turns.slice(from, from + chunkTurns));
          const sending = publish(chunk);
          const preferred = schedule[killed.length];
          if (preferred !== undefined) {
            // The scheduled service, once it holds work; failing that (its topics quiet for now: compactions
            // come every 12 turns a session), the next service in the schedule's order that holds some.
            const order = [preferred, ...serviceNames.filter((n) => n !== preferred)];
            const deadline = Date.now() + workWaitMs;
            let target: { name: ServiceName; work: number } | null = null;
            let works: (number | null)[] = [];
            while (target === null && Date.now() < deadline) {
              works = await Promise.all(order.map((n) => uncommitted(deployment, n)));
              const at = works.findIndex(
                (w, i) => (w ?? 0) > 0 && (i === 0 || Date.now() > deadline - 1_000),
              );
              if (at >= 0) target = { name: order[at]!, work: works[at]! };
              else await sleep(20);
            }
            if (target === null) {
              console.log(
                `${elapsed()} no kill after chunk ${step + 1}: uncommitted ${order.map((n, i) => `${n} ${works[i]}`).join(', ')}`,
              );
            } else {
              const { name, work } = target;
              const victim = live.get(name)!;
              const state = (await victim.isReady()) ? 'running' : 'starting';
              await killHard(victim);
              const line = `${elapsed()} ${name} (${state}, ${work} records uncommitted, chunk ${step + 1})`;
              killed.push(line);
              victims.add(name);
              console.log(`SIGKILL ${line}`);
              const killedAt = Date.now();
              setTimeout(() => {
                const next = launch(name);
                recoveries.push(
                  ready(next, 120_000).then(
                    () => `${name} ready ${((Date.now() - killedAt) / 1000).toFixed(1)} s after its kill`,
                    () => `${name} killed at ${line}: its successor never got ready (or was killed too)`,
                  ),
                );
              }, random() * 1_000);
            }
          }
          await sending;
          published += chunk.length;
          if (step === flushAfter) {
            await redis.flushall();
            faults.push(`${elapsed()} Redis FLUSHALL after chunk ${step + 1}`);
            console.log(faults.at(-1));
          }
          if (step === brokerKillAfter) {
            await kafka.kill();
            const at = elapsed();
            await sleep(3_000);
            await kafka.restart();
            faults.push(`${at} broker SIGKILL after chunk ${step + 1}, restarted at ${elapsed()}`);
            console.log(faults.at(-1));
          }
          await sleep(800 + random() * 1_200);
        }
      } finally {
        await publisher.close();
      }
      expect(published).toBe(sessions * turnsPerSession);
      expect(killed).toHaveLength(kills);
      expect(faults).toHaveLength(flushAfter < 0 ? 1 : 2);
      await sleep(1_000); // the last restart is launched within a second of its kill
      await Promise.all([...live.values()].map((p) => ready(p, 120_000)));
      console.log(
        `${elapsed()} all published (${rejections} rejections republished), every service restarted and ready`,
      );

      // The references: the whole pipeline of a run without crashes, per session, at the L0 positions
      // the turns really have (so compactions and decisions compare byte for byte, not by id alone).
      const total = () => [...tap.positions.values()].reduce((sum, seqs) => sum + seqs.size, 0);
      expect(await until(() => total() === sessions * turnsPerSession, 30_000)).toBe(true);
      const expected = expectationsOf(workload, tap, { policyOf, maxRepairs: 1 });

      // Quiet: every session holds what its reference does and resumes from the reference's marker.
      const resumeClient = createResumeClient({ redis, redisPrefix, bus });
      clients.push(resumeClient);
      const pending = await untilSettled(expected, journal, resumeClient, {
        timeoutMs: 120_000,
        abort: () => unexpected.length > 0,
      });
      console.log(`${elapsed()} settled: ${expected.length - pending.length}/${expected.length} sessions`);
      // What an unsettled session's stages hold, for whoever reads a failure.
      const projection = new Projection(redis, { prefix: redisPrefix });
      for (const e of pending) {
        const session = journal.session(e.tenantId, e.sessionId);
        const decided = new Set(session.decisions.map((d) => d.markerId));
        const undecided = session.compactions.filter((c) => !decided.has(c.marker.markerId));
        const watermark = await projection.watermark(e.tenantId, e.sessionId);
        const order = session.compactions.map(
          (c) => `L${c.tier}:${c.span.fromSeq}-${c.span.toSeq}${c.repairOf === null ? '' : 'r'}`,
        );
        const verdicts = session.decisions.map(
          (d) => `${d.type === 'marker_emitted' ? '+' : '-'}${d.markerId.slice(0, 6)}`,
        );
        console.log(
          `${e.sessionId} compactions in topic order: ${order.join(' ')}; decisions: ${verdicts.join(' ')}`,
        );
        const keys = await redis.keys(`${redisPrefix}*${e.sessionId}*`);
        console.log(
          `unsettled ${e.sessionId}: undecided ${undecided.map((c) => `${c.marker.markerId.slice(0, 8)} L${c.tier} ${c.span.fromSeq}-${c.span.toSeq}`).join(', ') || 'none on the topic'}; ` +
            `applied ${watermark.appliedSeq} broken ${JSON.stringify(watermark.broken)}; ${differences(session, e).join('; ').slice(0, 300)}; keys ${keys.join(' ')}`,
        );
      }
      if (pending.length > 0) {
        for (const name of serviceNames) {
          console.log(
            `${name} uncommitted ${await uncommitted(deployment, name)}; its output:\n${live.get(name)!.output()}`,
          );
        }
      }
      expect(unexpected, 'a service exited on its own').toEqual([]);
      expect(await tap.caughtUp(30_000)).toBe(true);
      expect(await journal.caughtUp(30_000)).toBe(true);

      // 1. The final markers are those of the run without crashes, byte for byte.
      expectOnReference(journal, expected);

      // 2. No turn lost from (or applied twice to) the projection: all applied, nothing broken, and the
      //    state at every reference boundary is the fold's.
      await expectProjectionIsTheFold(new Projection(redis, { prefix: redisPrefix }), expected);

      // 3. A duplicate is never visible twice: every copy of a compaction id, or of a decision's
      //    (markerId, type, cause), has the same bytes; the journal's copy is the one downstream sees.
      expect(tap.conflicting()).toEqual([]);
      console.log(
        `${tap.encodings.size} distinct compactions and decisions on the topics; duplicate copies: ${JSON.stringify(tap.redundant())}`,
      );

      // 4. Every session resumes from the reference's plan marker, with one contextHash across two
      //    resumes (the second by a client of its own, without a context cache).
      const second = createResumeClient({ redis, redisPrefix, bus, contextCacheBytes: 0 });
      clients.push(second);
      for (const e of expected) {
        const a = await resumeClient.resume(e.tenantId, e.sessionId);
        const b = await second.resume(e.tenantId, e.sessionId);
        expect(a.ok && b.ok).toBe(true);
        if (!a.ok || !b.ok) continue;
        expect({ session: e.sessionId, marker: a.result.markerId }).toEqual({
          session: e.sessionId,
          marker: e.planMarker,
        });
        expect(b.result.contextHash).toBe(a.result.contextHash);
      }

      expect(victims).toEqual(new Set(serviceNames));
      const recovered = await Promise.all(recoveries);
      console.log(
        `${elapsed()} done after ${killed.length} kills:\n  ${killed.join('\n  ')}\n${faults.join('\n')}\nrestarts:\n  ${recovered.join('\n  ')}`,
      );
    },
  );
});
