import { canonicalJson, definePolicy, type Policy, type TurnEvent } from '@tidemark/core';
import {
  demoEnv,
  dropDeployment,
  Journal,
  startPipeline,
  waitUntilReady,
  type Env,
  type Pipeline,
} from '@tidemark/cli';
import { ContractError, createPublisher, sessionKey, type Publisher } from '@tidemark/contract';
import { createResumeClient } from '@tidemark/resume';
import { generateWorkload } from '@tidemark/scenarios';
import { Projection } from '@tidemark/state';
import { uniqueName } from '@tidemark/test-infra';
import { Redis } from 'ioredis';
import { expect, onTestFinished } from 'vitest';
import { RawTap } from './chaos-harness.js';
import { openRunLog } from './run-log.js';
import {
  differences,
  expectationsOf,
  sleep,
  until,
  untilSettled,
  expectProjectionIsTheFold,
} from './reference-check.js';

// A fault run, as an operator meets one: the four services in one process on a deployment of its own, a
// workload published at a steady rate on every partition through the public publisher, faults injected
// by the test on one schedule (publishUnderFaults), and at the end every session compared with the core
// reference. Shared by the fault tests (redis-loss, broker-faults, network-faults), so "settled" and
// "recovered" mean the same in each.

export interface FaultRunOptions {
  readonly name: string;
  readonly sessions: number;
  readonly turnsPerSession: number;
  readonly kafkaBrokers: readonly string[];
  readonly schemaRegistryUrl: string;
  readonly redisUrl: string;
}

export interface FaultRun {
  /** The deployment's name: its topic prefix and Redis key prefix. */
  readonly run: string;
  readonly env: Env;
  readonly pipeline: Pipeline;
  readonly journal: Journal;
  readonly tap: RawTap;
  readonly workload: readonly (readonly TurnEvent[])[];
  /** The policy of the workload's session at this index. */
  readonly policyOf: (index: number) => Policy;
  readonly publisher: Publisher;
  /** Seconds since the run began, for progress lines. */
  readonly elapsed: () => string;
  /** Marker decisions seen so far, over every session. */
  readonly decisions: () => number;
  /** Publishes turns, republishing them after 1 s while the publisher rejects them as retriable. */
  publish(turns: readonly TurnEvent[]): Promise<void>;
  /** Publisher rejections so far (each followed by a republish). */
  readonly rejections: { count: number };
  /** Waits (up to 60 s) until decisions flow again after a fault ended; a line saying how long it took. */
  recovery(label: string): Promise<string>;
}

const narrativeEvery = 4;

export async function startFaultRun(options: FaultRunOptions): Promise<FaultRun> {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  const run = uniqueName(options.name);
  const tenantId = options.name;
  const basePolicy = definePolicy({ l1EveryTurns: 12, digestFanIn: 3 });
  const narrative = definePolicy({ ...basePolicy, summarizer: 'narrative' });
  // Every fourth session lossy, so invalidations and strict repairs happen under the faults too.
  const policyOf = (index: number): Policy => (index % narrativeEvery === 1 ? narrative : basePolicy);
  const workload = generateWorkload({
    tenantId,
    sessions: options.sessions,
    turns: options.turnsPerSession,
    seed: 77,
  });
  const overrides = Object.fromEntries(
    workload
      .map((turns, index) => [turns, index] as const)
      .filter(([, index]) => policyOf(index) === narrative)
      .map(([turns]) => [sessionKey(tenantId, turns[0]!.sessionId), narrative]),
  );
  const env = await demoEnv(
    {
      KAFKA_BROKERS: options.kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: options.schemaRegistryUrl,
      REDIS_URL: options.redisUrl,
      TOPIC_PREFIX: `${run}.`,
      REDIS_PREFIX: `${run}:`,
      LOG_LEVEL: 'info',
      L1_EVERY_TURNS: String(basePolicy.l1EveryTurns),
      DIGEST_FAN_IN: String(basePolicy.digestFanIn),
      MAX_REPAIRS: '1',
      POLICY_OVERRIDES: JSON.stringify(overrides),
    },
    [],
  );
  // The services log at info to a file of the run's own (run-log.ts), so a failed run can be read after.
  const { logger, path: logPath } = openRunLog(run, options.name);
  const pipeline = await startPipeline({ env, logger, port: 0 });
  let journal: Journal | null = null;
  let tap: RawTap | null = null;
  let publisher: Publisher | null = null;
  onTestFinished(async () => {
    await publisher?.close();
    await pipeline.stop();
    await journal?.close();
    await tap?.close();
    await dropDeployment(env, logger);
  });
  await waitUntilReady(pipeline.host);
  const keys = workload.map((turns) => turns[0]!.sessionId);
  journal = await Journal.open(
    pipeline.bus,
    keys.map((sessionId) => sessionKey(tenantId, sessionId)),
  );
  tap = await RawTap.open(pipeline.bus);
  publisher = await createPublisher({
    brokers: [...options.kafkaBrokers],
    registryUrl: options.schemaRegistryUrl,
    clientId: `${run}-publisher`,
    topicPrefix: `${run}.`,
    timeoutMs: 10_000,
    logger,
  });
  const j = journal;
  const p = publisher;
  const decisions = () =>
    keys.reduce((sum, sessionId) => sum + j.session(tenantId, sessionId).decisions.length, 0);
  const rejections = { count: 0 };
  console.log(
    `${elapsed()} pipeline ready; ${options.sessions} sessions × ${options.turnsPerSession} turns; log ${logPath}`,
  );
  return {
    run,
    env,
    policyOf,
    pipeline,
    journal,
    tap,
    workload,
    publisher,
    elapsed,
    decisions,
    rejections,
    async publish(turns) {
      // What the publisher's contract asks of a runtime (libs/contract/README.md): a retriable rejection
      // is answered by publishing the same turns again, after a pause.
      for (;;) {
        try {
          await p.publishTurns(turns);
          return;
        } catch (error) {
          if (!(error instanceof ContractError) || !error.retriable) throw error;
          rejections.count += 1;
          await sleep(1_000);
        }
      }
    },
    async recovery(label) {
      const ended = Date.now();
      const before = decisions();
      const flowing = await until(() => decisions() > before, 60_000);
      const seconds = ((Date.now() - ended) / 1000).toFixed(1);
      return `${label}: decisions again ${flowing ? `${seconds} s` : 'never (60 s)'} after it ended`;
    },
  };
}

/** How a fault run publishes its workload and when it starts each fault. */
export interface FaultSchedule {
  /** Turns of every session per chunk. */
  readonly chunkTurns: number;
  /** The pause between chunks, jittered by ×0.5–1.5. */
  readonly chunkPauseMs: number;
  /** Chunks per stretch of load; a fault starts mid-way through each, until every fault has run. */
  readonly chunksPerFault: number;
  readonly random: () => number;
}

/**
 * Publishes the workload chunk by chunk at a steady rate and runs the faults one after another, each
 * started mid-way through a stretch of load (with the chunks before it in flight on every partition) and
 * not awaited while the chunks go on: the runtime keeps its turns coming (the publish retries). Resolves
 * once every turn is published and every fault is over.
 */
export async function publishUnderFaults(
  faultRun: FaultRun,
  faults: readonly (() => Promise<void>)[],
  schedule: FaultSchedule,
): Promise<void> {
  const { chunkTurns, chunkPauseMs, chunksPerFault, random } = schedule;
  const { workload } = faultRun;
  const turnsPerSession = workload[0]!.length;
  const outages: Promise<void>[] = [];
  for (let chunk = 0; chunk * chunkTurns < turnsPerSession; chunk++) {
    const from = chunk * chunkTurns;
    await faultRun.publish(workload.flatMap((turns) => turns.slice(from, from + chunkTurns)));
    if (chunk % chunksPerFault === Math.floor(chunksPerFault / 2) && outages.length < faults.length) {
      await Promise.all(outages);
      outages.push(faults[outages.length]!());
    }
    await sleep(chunkPauseMs * (0.5 + random()));
  }
  await Promise.all(outages);
  console.log(
    `${faultRun.elapsed()} all published; the publisher rejected ${faultRun.rejections.count} times`,
  );
}

/**
 * Once every turn is published: waits (up to 90 s) until every session holds what the core reference
 * computes and resumes from its marker, then asserts it all: the same compactions byte for byte, a
 * decision for every marker and the same trusted ones, none on missing state, every turn applied once
 * (the projection is the fold at every boundary), no duplicate with other bytes, no session stale.
 */
export async function expectSettledOnReference(faultRun: FaultRun, redisUrl: string): Promise<void> {
  const { journal, tap, workload, pipeline, elapsed, policyOf, run } = faultRun;
  const turnsPerSession = workload[0]!.length;
  const total = () => [...tap.positions.values()].reduce((sum, seqs) => sum + seqs.size, 0);
  expect(await until(() => total() === workload.length * turnsPerSession, 30_000)).toBe(true);
  const expected = expectationsOf(workload, tap, { policyOf, maxRepairs: 1 });

  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  const client = createResumeClient({
    redis,
    redisPrefix: `${run}:`,
    bus: pipeline.bus,
    policyFor: (ref) => policyOf(workload.findIndex((turns) => turns[0]!.sessionId === ref.sessionId)),
  });
  onTestFinished(async () => {
    await client.close();
    redis.disconnect();
  });
  const pending = await untilSettled(expected, journal, client, { timeoutMs: 90_000 });
  console.log(`${elapsed()} settled: ${expected.length - pending.length}/${expected.length} sessions`);
  // What an unsettled session's stages hold, for whoever reads a failure.
  const projection = new Projection(redis, { prefix: `${run}:` });
  for (const e of pending) {
    const session = journal.session(e.tenantId, e.sessionId);
    const windowKeys = await redis.keys(`${run}:cmp:*${e.sessionId}*:win`);
    const raw = windowKeys[0] === undefined ? null : await redis.get(windowKeys[0]);
    const window = raw === null ? null : (JSON.parse(raw) as { lastSeq: number; turns: { seq: number }[] });
    const watermark = await projection.watermark(e.tenantId, e.sessionId);
    console.log(
      `unsettled ${e.sessionId}: compactions up to seq ${Math.max(0, ...session.compactions.map((c) => c.span.toSeq))}, ` +
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
  // Every turn applied once: the projection is the fold at every boundary.
  await expectProjectionIsTheFold(projection, expected);
  expect(tap.conflicting()).toEqual([]);
  // No session is left stale: every due compaction was decided.
  for (const e of expected) {
    const outcome = await client.resume(e.tenantId, e.sessionId);
    expect({ session: e.sessionId, stale: outcome.ok ? outcome.result.stale : 'no resume' }).toEqual({
      session: e.sessionId,
      stale: null,
    });
  }
}
