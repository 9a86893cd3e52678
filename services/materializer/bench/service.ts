// Benchmark: the materializer end to end (turns.l0 → decode → projection in Redis), in turns per second,
// against a bare kafkajs consumer reading the same records from the same topic in the same run (the bus's
// own ceiling here: no decoding, no Redis).
//
//   pnpm exec tsx services/materializer/bench/service.ts
//   BENCH_TURNS=40000 BENCH_SESSIONS=80 pnpm exec tsx services/materializer/bench/service.ts
//
// Both are timed from the first record seen to the last (the group join is left out of both): the bare
// consumer by its own batches, the materializer by polling its watermarks every 10 ms (so its first batch's
// apply is not counted, a bias in its favour of one batch out of many). So it needs many batches: one
// fetch holds about 3,500 turns of a partition, and below about 30,000 turns (on 4 partitions) most turns
// are applied before a watermark is seen to move; at 8,000, all of them were, in one poll (a rate of
// billions of turns/s, and no batch's apply time observed yet).
import { randomUUID } from 'node:crypto';
import { Bus, provisionTopics, topicNames } from '@tidemark/contract';
import { generateSession, type TurnEvent } from '@tidemark/core';
import { parseConfig, Registry } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { create as createMaterializer, materializerConfigSchema } from '../src/index.js';

const totalTurns = Number(process.env.BENCH_TURNS ?? 40_000);
const sessions = Number(process.env.BENCH_SESSIONS ?? 80);
// Below this the figures mean nothing (see above): refused rather than printed.
const fewestTurns = 30_000;
if (!Number.isSafeInteger(totalTurns) || totalTurns < fewestTurns) {
  process.stderr.write(
    `service.ts: BENCH_TURNS must be an integer ≥ ${fewestTurns} (most turns would be applied before a watermark is seen to move), not ${String(totalTurns)}\n`,
  );
  process.exit(2);
}
if (!Number.isSafeInteger(sessions) || sessions < 1) {
  process.stderr.write(`service.ts: BENCH_SESSIONS must be an integer ≥ 1, not ${String(sessions)}\n`);
  process.exit(2);
}
const run = randomUUID().slice(0, 8);
const config = parseConfig(materializerConfigSchema, {
  ...process.env,
  TOPIC_PREFIX: `bench-${run}.`,
  REDIS_PREFIX: `bench-${run}:`,
  MATERIALIZER_GROUP_ID: `bench-materializer-${run}`,
  LOG_LEVEL: 'warn',
});
const topics = topicNames(config.TOPIC_PREFIX);

const perSession = Math.ceil(totalTurns / sessions);
const all = Array.from({ length: sessions }, (_, i) =>
  generateSession(3_000 + i, { turns: perSession, sessionId: `svc-${i}` }),
);
const turns: TurnEvent[] = [];
for (let seq = 0; seq < perSession; seq++)
  for (const list of all) if (list[seq] !== undefined) turns.push(list[seq]!);

const bus = await Bus.connect({
  brokers: config.KAFKA_BROKERS,
  registryUrl: config.SCHEMA_REGISTRY_URL,
  clientId: `bench-${run}`,
  topics,
  service: 'bench',
});
const admin = bus.kafka.admin();
await admin.connect();
await provisionTopics(admin, topics, { partitions: config.TOPIC_PARTITIONS });
const producer = await bus.producer();
for (let at = 0; at < turns.length; at += 1_000) await producer.send('turns', turns.slice(at, at + 1_000));

// Baseline: a bare kafkajs consumer of the same topic.
const kafka = new Kafka({
  clientId: `bench-bare-${run}`,
  brokers: config.KAFKA_BROKERS,
  logLevel: logLevel.NOTHING,
});
const bare = kafka.consumer({ groupId: `bench-bare-${run}`, readUncommitted: false });
await bare.connect();
await bare.subscribe({ topic: topics.turns, fromBeginning: true });
let seen = 0;
let bareFirst = 0;
let bareLast = 0;
await new Promise<void>((resolve) => {
  void bare.run({
    eachBatch: async ({ batch }) => {
      if (bareFirst === 0) bareFirst = performance.now();
      seen += batch.messages.length;
      bareLast = performance.now();
      if (seen >= turns.length) resolve();
      return Promise.resolve();
    },
  });
});
await bare.disconnect();

// The materializer, on a projection that already exists (no rebuild).
const redis = new Redis(config.REDIS_URL);
const projection = new Projection(redis, { prefix: config.REDIS_PREFIX });
await projection.applyBatch([]);
const registry = new Registry();
const materializer = createMaterializer(config, { metrics: registry, redis });
const applied = async (): Promise<number> =>
  (await Promise.all(all.map((list) => projection.watermark('tenant-a', list[0]!.sessionId)))).reduce(
    (sum, w) => sum + w.appliedSeq,
    0,
  );
await materializer.run();
let first = 0;
for (;;) {
  const now = await applied();
  if (now > 0 && first === 0) first = performance.now();
  if (now >= turns.length) break;
  await new Promise((resolve) => setTimeout(resolve, 10));
}
const last = performance.now();
const applySeconds = Number(
  /tidemark_materializer_apply_seconds_sum (\S+)/.exec(await registry.metrics())?.[1] ?? Number.NaN,
);
await materializer.stop();

// Clean up: the bench's topics, groups and keys.
let cursor = '0';
do {
  const [next, keys] = await redis.scan(cursor, 'MATCH', `${config.REDIS_PREFIX}*`, 'COUNT', 1000);
  cursor = next;
  if (keys.length > 0) await redis.unlink(...keys);
} while (cursor !== '0');
redis.disconnect();
await bus.disconnect();
await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
await admin.deleteGroups([config.MATERIALIZER_GROUP_ID, `bench-bare-${run}`]).catch(() => undefined);
await admin.disconnect();

const bareRate = turns.length / ((bareLast - bareFirst) / 1000);
const rate = turns.length / ((last - first) / 1000);
console.log(
  [
    `materializer service benchmark — ${turns.length} turns, ${sessions} sessions, ${config.TOPIC_PARTITIONS} partitions`,
    `bare kafkajs consume        ${bareRate.toFixed(0)} turns/s`,
    `materializer (end to end)   ${rate.toFixed(0)} turns/s`,
    `ratio materializer / bare   ${(rate / bareRate).toFixed(2)}`,
    `apply time / wall time      ${(applySeconds / ((last - first) / 1000)).toFixed(2)} (batch applies summed; over 1 when partitions apply at once: PARTITIONS_CONSUMED_CONCURRENTLY=${config.PARTITIONS_CONSUMED_CONCURRENTLY})`,
    `command: BENCH_TURNS=${totalTurns} BENCH_SESSIONS=${sessions} pnpm exec tsx services/materializer/bench/service.ts`,
  ].join('\n'),
);
