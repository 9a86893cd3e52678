import { decisionIdentity, Journal } from '@tidemark/cli';
import { createPublisher, sessionKey } from '@tidemark/contract';
import { seededRandom } from '@tidemark/core';
import { createResumeClient, type ResumeLibraryClient } from '@tidemark/resume';
import { generateWorkload } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { endpoints } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  killHard,
  provisionProcessDeployment,
  RawTap,
  ready,
  serviceNames,
  shuffled,
  type ServiceName,
} from './chaos-harness.js';
import {
  differences,
  expectationsOf,
  expectReferenceRecords,
  sleep,
  until,
  untilSettled,
  expectProjectionIsTheFold,
} from './reference-check.js';

// The design's first reliability claim, end to end: the four services as separate processes, SIGKILLed
// one at a time on a seeded random schedule while a workload is published, and restarted. Once all of
// them run again and the pipeline is quiet, every session must hold exactly what the core reference (a
// run without crashes) computes — every compaction id, a decision for every marker, the same trusted
// markers, the same resume plan — with no turn lost from the projection, and every duplicate on the
// topics byte-identical, so the journal (which keeps one copy) and the resume plan see each thing once.

const seed = 20261203;
const sessions = 12;
const turnsPerSession = 120;
/** Turns per session in each published chunk. */
const chunkTurns = 10;
/** One kill after each of the first chunks: at least two per service. */
const kills = 10;
/** Sessions compacted by the lossy narrative summarizer, so validator invalidations and repairs happen. */
const narrativeSessions = new Set([1, 4, 7, 10]);
const tenantId = 'chaos';

describe('SIGKILL chaos across the four services', () => {
  it(
    'settles on the reference: same markers, no turn lost, every duplicate identical',
    { timeout: 240_000 },
    async () => {
      const started = Date.now();
      const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
      const { kafkaBrokers, schemaRegistryUrl } = endpoints();
      const workload = generateWorkload({ tenantId, sessions, turns: turnsPerSession, seed: 900 });
      const deployment = await provisionProcessDeployment({
        name: 'chaos',
        workload,
        lossy: narrativeSessions,
      });
      const { run, topicPrefix, redisPrefix, bus, redis, live, unexpected, launch, policyOf } = deployment;
      // The kill schedule: every service twice in a seeded order, then random ones.
      const random = seededRandom(seed);
      const schedule: ServiceName[] = shuffled([...serviceNames, ...serviceNames], random);
      while (schedule.length < kills)
        schedule.push(serviceNames[Math.floor(random() * serviceNames.length)]!);
      console.log(`chaos seed ${seed} (${run}): kills ${schedule.join(', ')}`);

      const logger = createLogger('chaos', 'error');
      const clients: ResumeLibraryClient[] = [];
      let journal: Journal | null = null;
      let tap: RawTap | null = null;
      onTestFinished(async () => {
        await Promise.all(clients.map((c) => c.close()));
        await journal?.close();
        await tap?.close();
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

      // Publish in chunks, round-robin over the sessions; a moment after each of the first chunks lands
      // (while the services work on it) the next service of the schedule is killed, and restarted at once
      // or after a moment, so the chunks after it arrive while it starts, and a service that comes up
      // twice in a row is killed again somewhere in its start.
      const publisher = await createPublisher({
        brokers: kafkaBrokers,
        registryUrl: schemaRegistryUrl,
        clientId: `${run}-publisher`,
        topicPrefix,
        logger,
      });
      let published = 0;
      const killed: string[] = [];
      try {
        for (let from = 0, step = 0; from < turnsPerSession; from += chunkTurns, step++) {
          const chunk = workload.flatMap((turns) => turns.slice(from, from + chunkTurns));
          const sending = publisher.publishTurns(chunk);
          const name = schedule[step];
          if (name !== undefined) {
            // Within the chunk's trip through the pipeline: while it is applied, compacted, validated.
            await sleep(random() * 500);
            const victim = live.get(name)!;
            const state = (await victim.isReady()) ? 'running' : 'starting';
            await killHard(victim);
            const line = `${elapsed()} ${name} (${state}, chunk ${step + 1} sent ${published} turns before it)`;
            killed.push(line);
            console.log(`SIGKILL ${line}`);
          }
          await sending;
          published += chunk.length;
          if (name !== undefined) {
            await sleep(random() * 1_000);
            launch(name);
          }
          await sleep(800 + random() * 1_200);
        }
      } finally {
        await publisher.close();
      }
      expect(published).toBe(sessions * turnsPerSession);
      expect(killed).toHaveLength(kills);
      await Promise.all([...live.values()].map((p) => ready(p, 90_000)));
      console.log(`${elapsed()} all published, every service restarted and ready`);

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
      expect(unexpected, 'a service exited on its own').toEqual([]);
      expect(await tap.caughtUp(30_000)).toBe(true);
      expect(await journal.caughtUp(30_000)).toBe(true);

      // 1. The final markers are those of the run without crashes.
      for (const e of expected) {
        const session = journal.session(e.tenantId, e.sessionId);
        expect({ session: e.sessionId, problems: differences(session, e) }).toEqual({
          session: e.sessionId,
          problems: [],
        });
        // The same bytes as the reference, and nothing beyond it: no compaction or decision a crash made
        // up, changed or left out.
        expectReferenceRecords(session, e);
        const unverifiable = session.decisions.filter(
          (d) => d.type === 'marker_invalid' && d.violations.some((v) => v.condition === 'unverifiable'),
        );
        expect(unverifiable.map(decisionIdentity), 'markers decided on missing state').toEqual([]);
      }

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

      expect(new Set(schedule)).toEqual(new Set(serviceNames));
      console.log(`${elapsed()} done after ${killed.length} kills:\n  ${killed.join('\n  ')}`);
    },
  );
});
