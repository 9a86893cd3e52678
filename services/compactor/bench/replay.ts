// Replay throughput (design.md, "Targets": replay at ≥ 0.8× the raw L0 consume rate). The same turns.l0,
// in the same run, read three ways:
//   1. raw: a bare kafkajs consumer counting records (no decoding) — the broker's own read rate here;
//   2. decoded: the Bus's consumer (registry framing, Avro decode, validation) — what every service pays;
//   3. replay: `tidemark replay` under the default policy as generation 1 (read, window, plan, summarize,
//      build, publish the compactions), its rate being turns read over its wall time.
// The projection the replay reads its strict claims from is applied beforehand (not timed).
//
//   pnpm exec tsx services/compactor/bench/replay.ts [sessions] [turns]      (default 1000 × 200)
//
// Needs the local stack (pnpm infra:up). Uses topics and Redis keys of its own, removed at the end.
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { Bus, provisionTopics, topicNames } from '@tidemark/contract';
import { defaultPolicy, generateSession, type TurnEvent } from '@tidemark/core';
import { commonConfig, createLogger, parseConfig, z } from '@tidemark/service';
import { Projection, unlinkMatching } from '@tidemark/state';
import { Redis } from 'ioredis';
import { replay, replayTarget } from '../src/replay.js';
import { recordFigures } from '../../../bench/figures.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const sessions = Number(process.argv[2] ?? 1000);
const turnsPerSession = Number(process.argv[3] ?? 200);
const total = sessions * turnsPerSession;
const command = `pnpm exec tsx services/compactor/bench/replay.ts ${sessions} ${turnsPerSession}`;
const run = randomUUID().slice(0, 8);
const config = parseConfig(z.object(commonConfig), {
  ...process.env,
  TOPIC_PREFIX: `bench-replay-${run}.`,
  REDIS_PREFIX: `bench-replay-${run}:`,
});
const topics = topicNames(config.TOPIC_PREFIX);
const logger = createLogger('bench', 'error');
const say = (line: string) => process.stderr.write(`${line}\n`);

const bus = await Bus.connect({
  brokers: config.KAFKA_BROKERS,
  registryUrl: config.SCHEMA_REGISTRY_URL,
  clientId: `bench-replay-${run}`,
  topics,
  service: 'bench',
  logger,
});
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
const admin = await bus.admin();

try {
  await provisionTopics(admin, topics);

  say(`publishing ${total} turns (${sessions} sessions × ${turnsPerSession})…`);
  const producer = await bus.producer();
  const chunk = 50;
  for (let first = 0; first < sessions; first += chunk) {
    const turns: TurnEvent[] = [];
    for (let s = first; s < Math.min(sessions, first + chunk); s++) {
      turns.push(
        ...generateSession(s + 1, { tenantId: 'bench', sessionId: `s-${s}`, turns: turnsPerSession }),
      );
    }
    await producer.send('turns', turns);
  }

  /** Reads the whole turns topic once with a fresh group; returns the records read per second. */
  const timedRead = async (
    label: string,
    read: (done: () => void, count: (n: number) => void) => Promise<() => Promise<void>>,
  ): Promise<number> => {
    let seen = 0;
    let resolveDone!: () => void;
    const finished = new Promise<void>((resolve) => (resolveDone = resolve));
    const began = performance.now();
    const stop = await read(resolveDone, (n) => {
      seen += n;
      if (seen >= total) resolveDone();
    });
    await finished;
    const seconds = (performance.now() - began) / 1000;
    await stop();
    say(`${label}: ${seen} turns in ${seconds.toFixed(2)} s`);
    return seen / seconds;
  };

  const raw = await timedRead('raw consume', async (_done, count) => {
    const consumer = bus.kafka.consumer({ groupId: `bench-raw-${run}`, maxBytes: 16 * 1024 * 1024 });
    await consumer.connect();
    await consumer.subscribe({ topic: topics.turns, fromBeginning: true });
    await consumer.run({
      eachBatchAutoResolve: true,
      eachBatch: ({ batch }) => {
        count(batch.messages.length);
        return Promise.resolve();
      },
    });
    return () => consumer.disconnect();
  });

  const projection = new Projection(redis, { prefix: config.REDIS_PREFIX });
  const decoded = await timedRead('decoded consume', async (_done, count) => {
    const consumer = bus.consumer({
      groupId: `bench-decoded-${run}`,
      role: 'turns',
      onBatch: (records) => {
        count(records.length);
        return Promise.resolve();
      },
    });
    await consumer.run();
    return () => consumer.stop();
  });

  say('applying the projection the replay reads (not timed)…');
  await timedRead('projection apply', async (_done, count) => {
    const consumer = bus.consumer({
      groupId: `bench-apply-${run}`,
      role: 'turns',
      onBatch: async (records) => {
        await projection.applyBatch(
          records.map((r) => ({ turn: r.value, partition: r.raw.partition, offset: r.raw.offset })),
        );
        count(records.length);
      },
    });
    await consumer.run();
    return () => consumer.stop();
  });

  say('replaying…');
  const result = await replay({
    ...replayTarget(config),
    policy: defaultPolicy,
    generation: 1,
    progress: 'none',
    logger,
  });
  const replayRate = result.turns / result.seconds;

  const f = (n: number) => Math.round(n).toLocaleString('en-US');
  process.stdout.write(
    [
      `replay throughput, ${f(total)} turns (${sessions} sessions × ${turnsPerSession}), 4 partitions, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      `  raw consume (kafkajs, no decoding)   ${f(raw)} turns/s`,
      `  decoded consume (Bus)                ${f(decoded)} turns/s`,
      `  replay (default policy)              ${f(replayRate)} turns/s, ${result.compactions} compactions in ${result.seconds.toFixed(2)} s`,
      `  replay / raw consume                 ${(replayRate / raw).toFixed(2)}  (target ≥ 0.8)`,
      `  replay / decoded consume             ${(replayRate / decoded).toFixed(2)}`,
      `command: ${command}`,
      '',
    ].join('\n'),
  );
  recordFigures('replay', {
    turns: total,
    rawTurnsPerSecond: raw,
    replayTurnsPerSecond: replayRate,
    replayVsRaw: replayRate / raw,
    command,
  });
} finally {
  await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
  await unlinkMatching(redis, `${config.REDIS_PREFIX}*`);
  redis.disconnect();
  await bus.disconnect();
}
