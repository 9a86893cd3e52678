import { Journal } from '@tidemark/cli';
import { createPublisher, sessionKey } from '@tidemark/contract';
import { canonicalJson, seededRandom, type TurnEvent } from '@tidemark/core';
import { createResumeClient } from '@tidemark/resume';
import { generateWorkload } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { PlanStore } from '@tidemark/state';
import { endpoints } from '@tidemark/test-infra';
import { describe, expect, it } from 'vitest';
import { killHard, provisionProcessDeployment, ready, serviceNames, RawTap } from './chaos-harness.js';
import { expectationsOf, expectReferenceRecords, sleep, until, untilSettled } from './reference-check.js';

// "Same inputs, same bytes" for every record Tidemark publishes. One seeded workload (rejections,
// failures, calls open across compaction boundaries, a lossy summarizer on half the sessions with
// strict repairs on) is run three times, on deployments of their own, with the four services as
// separate processes:
//   straight        nothing happens to the services;
//   kills           the compactor and the validator are each SIGKILLed and restarted 5 times while
//                   batches are in flight;
//   late-validator  the validator starts only once every compaction (digests and repairs) is on the
//                   compactions topic, so it decides one backlog in batches cut where they fall.
// The compactions topic, the markers topic (the record payloads, without the registry's header) and
// every session's stored resume plan are then compared across the runs, record for record, byte for
// byte, and with the core reference.

const seed = 20261204;
const sessions = 8;
const turnsPerSession = 96;
const chunkTurns = 12;
const killsPerService = 5;
const narrativeSessions = new Set([0, 2, 5, 7]);
const tenantId = 'determinism';

type Mode = 'straight' | 'kills' | 'late-validator';

/** What a run leaves, per session: distinct record payloads (hex, sorted) and the stored plan. */
interface Snapshot {
  readonly compactions: Map<string, string[]>;
  readonly decisions: Map<string, string[]>;
  readonly plans: Map<string, string>;
  readonly positions: string;
  readonly kills: number;
}

const workload = generateWorkload({ tenantId, sessions, turns: turnsPerSession, seed: 4100 });

async function deploy(mode: Mode): Promise<Snapshot> {
  const started = Date.now();
  const say = (line: string) =>
    console.log(`[${mode} ${((Date.now() - started) / 1000).toFixed(1)}s] ${line}`);
  const { kafkaBrokers, schemaRegistryUrl } = endpoints();
  const deployment = await provisionProcessDeployment({
    name: `det-${mode}`,
    workload,
    lossy: narrativeSessions,
  });
  const { run, topicPrefix, redisPrefix, bus, redis, live, unexpected, launch, policyOf } = deployment;
  const logger = createLogger('determinism', 'error');
  let journal: Journal | null = null;
  let tap: RawTap | null = null;
  const client = createResumeClient({ redis, redisPrefix, bus });
  try {
    const first = mode === 'late-validator' ? serviceNames.filter((n) => n !== 'validator') : serviceNames;
    for (const name of [...first].reverse()) launch(name);
    await Promise.all([...live.values()].map((p) => ready(p, 60_000)));
    journal = await Journal.open(
      bus,
      workload.map((turns) => sessionKey(tenantId, turns[0]!.sessionId)),
    );
    tap = await RawTap.open(bus);

    // The same chunks in the same order in every run, one at a time, so every turn lands at the same
    // turns.l0 offset (checked below): the L0 positions in compactions and markers are then comparable.
    const random = seededRandom(seed);
    const publisher = await createPublisher({
      brokers: kafkaBrokers,
      registryUrl: schemaRegistryUrl,
      clientId: `${run}-publisher`,
      topicPrefix,
      logger,
    });
    let kills = 0;
    try {
      for (let from = 0, step = 0; from < turnsPerSession; from += chunkTurns, step++) {
        const chunk = workload.flatMap((turns) => turns.slice(from, from + chunkTurns));
        const sending = publisher.publishTurns(chunk);
        const killing = mode === 'kills' && step < killsPerService;
        if (killing) {
          // Both, once in each of the first chunks, while the chunk is compacted and decided; restarted at once or after
          // a moment, so later chunks also meet a service that is starting.
          for (const name of ['compactor', 'validator'] as const) {
            await sleep(100 + random() * 400);
            await killHard(live.get(name)!);
            kills++;
          }
        }
        await sending;
        if (killing) {
          for (const name of ['compactor', 'validator'] as const) {
            await sleep(random() * 600);
            launch(name);
          }
        }
        await sleep(600);
      }
    } finally {
      await publisher.close();
    }
    say(`published ${sessions * turnsPerSession} turns, ${kills} kills`);

    const total = () => [...tap!.positions.values()].reduce((sum, seqs) => sum + seqs.size, 0);
    expect(await until(() => total() === sessions * turnsPerSession, 30_000)).toBe(true);
    const expected = expectationsOf(workload, tap, { policyOf, maxRepairs: 1 });
    if (mode === 'late-validator') {
      // Every compaction (every digest and every repair) is on the topic before the first decision.
      const all = expected.flatMap((e) => e.reference.compactions.map((c) => `c:${c.compactionId}`));
      expect(await until(() => all.every((id) => tap!.encodings.has(id)), 90_000)).toBe(true);
      expect([...tap.encodings.keys()].filter((id) => id.startsWith('m:'))).toEqual([]);
      say(`all ${all.length} compactions on the topic; starting the validator`);
      launch('validator');
    }
    await Promise.all([...live.values()].map((p) => ready(p, 90_000)));

    const pending = await untilSettled(expected, journal, client, {
      timeoutMs: 120_000,
      abort: () => unexpected.length > 0,
    });
    expect(unexpected, 'a service exited on its own').toEqual([]);
    expect(
      pending.map((e) => e.sessionId),
      'sessions that did not settle',
    ).toEqual([]);
    expect(await tap.caughtUp(30_000)).toBe(true);
    say('settled');

    // Per session: every distinct payload on each topic (a redelivered copy is the same payload), and
    // the stored plan. The 5-byte header (magic byte, registry id) differs between deployments.
    const bySession = (kind: 'c:' | 'm:') => {
      const out = new Map<string, string[]>();
      for (const [identity, held] of tap!.encodings) {
        if (!identity.startsWith(kind)) continue;
        for (const hex of held) {
          const payload = hex.slice(10);
          const session = sessionOfPayload(payload);
          out.set(session, [...(out.get(session) ?? []), payload]);
        }
      }
      for (const list of out.values()) list.sort();
      return out;
    };
    const plans = new Map<string, string>();
    const store = new PlanStore(redis, { prefix: redisPrefix });
    for (const turns of workload) {
      const read = await store.read({ tenantId, sessionId: turns[0]!.sessionId });
      plans.set(turns[0]!.sessionId, read.ok ? canonicalJson(read.plan) : 'no epoch');
    }
    // Every run is the core reference's, record for record (decoded, canonical): no more, no less.
    for (const e of expected) expectReferenceRecords(journal.session(e.tenantId, e.sessionId), e);
    expect(tap.conflicting()).toEqual([]);
    return {
      compactions: bySession('c:'),
      decisions: bySession('m:'),
      plans,
      positions: canonicalJson(
        [...tap.positions].map(([key, seqs]) => [key, [...seqs].sort(([a], [b]) => a - b)]).sort(),
      ),
      kills,
    };
  } finally {
    await client.close();
    await journal?.close();
    await tap?.close();
    await deployment.close();
  }
}

/**
 * The session a record payload belongs to. Both schemas begin with the compaction or marker id then
 * tenantId and sessionId as Avro strings (a zigzag varint length, then UTF-8); simpler and safer to
 * find the session ids of this workload in the payload.
 */
function sessionOfPayload(hex: string): string {
  const text = Buffer.from(hex, 'hex').toString('latin1');
  const found = workload.map((turns) => turns[0]!.sessionId).filter((id) => text.includes(id));
  if (found.length !== 1) throw new Error(`a payload names ${found.length} of the workload's sessions`);
  return found[0]!;
}

function count(snapshot: Snapshot): { compactions: number; decisions: number; plans: number } {
  const sum = (m: Map<string, string[]>) => [...m.values()].reduce((n, list) => n + list.length, 0);
  return {
    compactions: sum(snapshot.compactions),
    decisions: sum(snapshot.decisions),
    plans: snapshot.plans.size,
  };
}

describe('determinism: same turns, same bytes, whatever the timing', () => {
  it(
    'publishes the same compactions, decisions and resume plans straight, under kills and with a late validator',
    { timeout: 600_000 },
    async () => {
      // The workload has what makes decisions interesting: rejections and failures, and calls open
      // across a boundary (claimed UNRESOLVED), in every session.
      const changes = workload.flat().flatMap((t: TurnEvent) => t.changes);
      expect(changes.some((c) => c.type === 'item_disposed' && c.disposition === 'rejected')).toBe(true);
      expect(changes.some((c) => c.type === 'item_disposed' && c.disposition === 'failed')).toBe(true);

      const straight = await deploy('straight');
      const kills = await deploy('kills');
      const late = await deploy('late-validator');
      expect(kills.kills).toBeGreaterThanOrEqual(2 * killsPerService);

      // Every turn at the same L0 position in every run, so positions inside records compare.
      expect(kills.positions).toBe(straight.positions);
      expect(late.positions).toBe(straight.positions);
      for (const [name, other] of [
        ['kills', kills],
        ['late-validator', late],
      ] as const) {
        for (const turns of workload) {
          const session = turns[0]!.sessionId;
          expect({ run: name, session, compactions: other.compactions.get(session) }).toEqual({
            run: name,
            session,
            compactions: straight.compactions.get(session),
          });
          expect({ run: name, session, decisions: other.decisions.get(session) }).toEqual({
            run: name,
            session,
            decisions: straight.decisions.get(session),
          });
          expect({ run: name, session, plan: other.plans.get(session) }).toEqual({
            run: name,
            session,
            plan: straight.plans.get(session),
          });
        }
      }
      const c = count(straight);
      console.log(
        `determinism: compared ${c.compactions} compactions, ${c.decisions} decisions and ${c.plans} resume plans ` +
          `record for record across 3 runs (${kills.kills} kills in one); all byte-identical`,
      );
    },
  );
});
