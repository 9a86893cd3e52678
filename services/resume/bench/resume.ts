// Resume latency, digest mode and raw mode (a 1,000-turn raw span), against the real stack, with the
// baselines measured in the same run: a bare Redis GET round trip (the floor of a digest resume) and
// bare Kafka fetches of the same turns.l0 range (the floor of a raw resume).
//
//   pnpm --filter @tidemark/resume bench            (or: pnpm exec tsx services/resume/bench/resume.ts)
//   BENCH_DIGEST_RUNS=2000 BENCH_RAW_RUNS=200 … to change the sample sizes.
//
// Setup: two sessions interleaved in one turns.l0 partition (so a raw read skips the other session's
// records, as it would in production), then a third session's 3,000 turns after them (the traffic that
// follows a session's last turn in a busy partition: a read of its tail must not decode it), materialized with the Projection, compacted by core's reference,
// the reference's compactions and decisions published; the resume service (worker + HTTP) is started and
// read through its library and its HTTP API.
import { randomUUID } from 'node:crypto';
import {
  definePolicy,
  generateSession,
  markerInvalid,
  rawCheckpoint,
  runReference,
  type MarkerDecision,
  type TurnEvent,
} from '@tidemark/core';
import { Bus, provisionTopics, topicNames } from '@tidemark/contract';
import { createServiceHost, parseConfig, Registry } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { hashToken } from '../src/auth.js';
import { resumeConfigSchema } from '../src/config.js';
import { L0Reader } from '@tidemark/contract';
import { createResumeClient } from '../src/library.js';
import { create as createResume } from '../src/service.js';
import { recordFigures } from '../../../bench/figures.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const digestRuns = Number(process.env.BENCH_DIGEST_RUNS ?? 2000);
const rawRuns = Number(process.env.BENCH_RAW_RUNS ?? 200);
const id = randomUUID().slice(0, 8);
const token = `bench-${id}`;
const config = parseConfig(resumeConfigSchema, {
  ...process.env,
  TOPIC_PREFIX: `bench-resume-${id}.`,
  REDIS_PREFIX: `bench-resume-${id}:`,
  RESUME_GROUP_ID: `bench-resume-${id}`,
  RESUME_TOKENS: `bench:${hashToken(token)}`,
  // Cold: no context cache, every resume reads Redis and turns.l0 and builds the context.
  RESUME_CONTEXT_CACHE_BYTES: '0',
  LOG_LEVEL: 'silent',
});
const logger = pino({ level: 'silent' });
const topics = topicNames(config.TOPIC_PREFIX);
const tenantId = 'bench';

const step = (text: string): void => {
  process.stderr.write(`${new Date().toISOString()} ${text}\n`);
};

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function measure(
  runs: number,
  fn: () => Promise<unknown>,
): Promise<{ p50: number; p99: number; mean: number }> {
  for (let i = 0; i < Math.min(20, runs); i += 1) await fn(); // warm-up: connections, schema cache, JIT
  const samples: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const start = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    mean: samples.reduce((a, b) => a + b, 0) / runs,
  };
}

async function main(): Promise<void> {
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: `bench-${id}`,
    topics,
    service: 'bench',
    logger,
  });
  const admin = bus.kafka.admin();
  await admin.connect();
  await provisionTopics(admin, topics, { partitions: 1 });
  const redis = new Redis(config.REDIS_URL);
  const projection = new Projection(redis, { prefix: config.REDIS_PREFIX });
  const producer = await bus.producer();

  // Two sessions, interleaved: digest (200 turns: L2 frame at #160, 40 raw turns after it) and raw
  // (1,000 turns, its only marker invalid: raw mode from the session start, a 1,000-turn span).
  const digestTurns = generateSession(1, { tenantId, sessionId: 'digest', turns: 200 });
  const rawTurns = generateSession(2, { tenantId, sessionId: 'raw', turns: 1000 });
  const interleaved: TurnEvent[] = [];
  for (let i = 0; i < rawTurns.length; i += 1) {
    interleaved.push(rawTurns[i]!);
    if (i % 5 === 0 && digestTurns[i / 5] !== undefined) interleaved.push(digestTurns[i / 5]!);
  }
  interleaved.push(...generateSession(3, { tenantId, sessionId: 'later', turns: 3000 }));
  for (let i = 0; i < interleaved.length; i += 500)
    await producer.send('turns', interleaved.slice(i, i + 500));

  const positions = new Map<string, Map<number, number>>();
  const materializer = bus.consumer({
    groupId: `bench-materialize-${id}`,
    role: 'turns',
    onBatch: async (records) => {
      await projection.applyBatch(
        records.map((r) => ({ turn: r.value, partition: r.raw.partition, offset: r.raw.offset })),
      );
      for (const r of records) {
        const map = positions.get(r.value.sessionId) ?? new Map<number, number>();
        map.set(r.value.seq, r.raw.offset);
        positions.set(r.value.sessionId, map);
      }
    },
  });
  await materializer.run();
  step('turns published; materializing');
  for (;;) {
    const [d, r] = await Promise.all([
      projection.watermark(tenantId, 'digest'),
      projection.watermark(tenantId, 'raw'),
    ]);
    if (d.appliedSeq === 200 && r.appliedSeq === 1000) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await materializer.stop();
  step('materialized');

  const digestRun = runReference(digestTurns, {
    policy: definePolicy({ l1EveryTurns: 40, digestFanIn: 4 }),
    offsetOf: (seq) => positions.get('digest')!.get(seq)!,
  });
  const rawRun = runReference(rawTurns, {
    policy: definePolicy({ l1EveryTurns: 1000 }),
    offsetOf: (seq) => positions.get('raw')!.get(seq)!,
  });
  const rawNode = rawRun.compactions[0]!;
  const rawDecisions: MarkerDecision[] = [
    markerInvalid(
      rawNode,
      [{ condition: 'closure', ids: ['bench'], detail: 'bench: marked invalid' }],
      rawCheckpoint(null, [], 0),
      'check',
    ),
  ];
  await producer.send('compactions', [...digestRun.compactions, ...rawRun.compactions]);
  await producer.send('markers', [...digestRun.decisions, ...rawDecisions]);

  const host = createServiceHost({
    name: 'resume',
    port: 0,
    logger,
    register: new Registry(),
    processMetrics: false,
  });
  const service = createResume(config, { host });
  await service.run();
  const { url } = await host.listen();
  const client = service.client;
  step('service started; waiting for plans');
  for (;;) {
    const [d, r] = await Promise.all([client.resume(tenantId, 'digest'), client.resume(tenantId, 'raw')]);
    if (d.ok && r.ok && d.result.mode === 'digest' && d.result.rawFromSeq === 161 && r.result.mode === 'raw')
      break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const get = async (sessionId: string) => {
    const response = await fetch(`${url}/v1/sessions/${tenantId}/${sessionId}/resume`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
    await response.arrayBuffer();
  };

  step('measuring');
  // Baselines in the same run.
  await redis.set(`${config.REDIS_PREFIX}bench`, 'x');
  const redisGet = await measure(digestRuns, () => redis.get(`${config.REDIS_PREFIX}bench`));
  const reader = new L0Reader({ kafka: bus.kafka, decode: () => Promise.resolve(null) });
  const rawFrom = positions.get('raw')!.get(1)!;
  const rawTo = positions.get('raw')!.get(1000)!;
  const bareFetch = await measure(rawRuns, async () => {
    for (let offset = rawFrom; offset <= rawTo;) {
      const messages = await reader.fetchAt(topics.turns, 0, offset, rawTo);
      if (messages.length === 0) break;
      offset = Number(messages.at(-1)!.offset) + 1;
    }
  });

  const digestLib = await measure(digestRuns, () => client.resume(tenantId, 'digest'));
  const digestHttp = await measure(digestRuns, () => get('digest'));
  const rawLib = await measure(rawRuns, () => client.resume(tenantId, 'raw'));
  const rawHttp = await measure(rawRuns, () => get('raw'));
  // Warm: the library with its context cache (a repeated resume of an unchanged plan and watermark).
  const warm = createResumeClient({ redis, bus, redisPrefix: config.REDIS_PREFIX, divergenceChecks: false });
  const digestWarm = await measure(digestRuns, () => warm.resume(tenantId, 'digest'));
  const rawWarm = await measure(rawRuns, () => warm.resume(tenantId, 'raw'));
  await warm.close();

  const row = (
    name: string,
    m: { p50: number; p99: number },
    baseline: { p50: number; p99: number } | null,
  ) =>
    `${name.padEnd(56)} p50 ${m.p50.toFixed(2).padStart(7)} ms   p99 ${m.p99.toFixed(2).padStart(7)} ms` +
    (baseline === null
      ? ''
      : `   ×${(m.p50 / baseline.p50).toFixed(1)} / ×${(m.p99 / baseline.p99).toFixed(1)} of baseline (p50/p99)`);
  const span = rawTo - rawFrom + 1;
  console.log(
    `resume latency — ${new Date().toISOString()}, broker ${config.KAFKA_BROKERS.join(',')}, redis ${config.REDIS_URL}`,
  );
  console.log(
    `command: pnpm exec tsx services/resume/bench/resume.ts   (BENCH_DIGEST_RUNS=${digestRuns} BENCH_RAW_RUNS=${rawRuns})`,
  );
  console.log(row(`baseline: bare Redis GET round trip (n=${digestRuns})`, redisGet, null));
  console.log(row(`digest, library, cold: node + 40 raw turns (n=${digestRuns})`, digestLib, redisGet));
  console.log(row(`digest, HTTP, cold (n=${digestRuns})`, digestHttp, redisGet));
  console.log(row(`digest, library, warm context cache (n=${digestRuns})`, digestWarm, redisGet));
  console.log(row(`baseline: bare fetches of ${span} offsets (n=${rawRuns})`, bareFetch, null));
  console.log(row(`raw, library, cold: 1,000-turn span (n=${rawRuns})`, rawLib, bareFetch));
  console.log(row(`raw, HTTP, cold: 1,000-turn span (n=${rawRuns})`, rawHttp, bareFetch));
  console.log(row(`raw, library, warm context cache (n=${rawRuns})`, rawWarm, bareFetch));
  console.log(
    `(raw span: turns 1..1000 over ${span} offsets of turns.l0, interleaved with another session and followed by a third's 3,000 turns; target: digest p99 ≤ 10 ms)`,
  );

  recordFigures('resume', {
    digestLibraryP99Ms: digestLib.p99,
    digestHttpP99Ms: digestHttp.p99,
    rawLibraryP99Ms: rawLib.p99,
    command: 'pnpm exec tsx services/resume/bench/resume.ts',
  });
  step('tearing down');
  await reader.close();
  step('reader closed');
  await host.close();
  step('host closed');
  await service.stop();
  step('service stopped');
  await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
  await admin.disconnect();
  const keys = await redis.keys(`${config.REDIS_PREFIX}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  await bus.disconnect();
  step('done');
}

await main();
// A benchmark script: the figures are printed and everything was closed; exit rather than wait for a
// client library's idle keep-alive sockets to time out.
process.exit(0);
