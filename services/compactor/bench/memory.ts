// The compactor's memory with many sessions open at once: 10,000 concurrent sessions of 30 turns each
// (none reaches the 40-turn L1 of the default policy, so every window stays open), against a baseline
// measured in the same process, with the compactor started, before any turn is read.
//
//   [STATE_RETENTION_MS=ms] node --expose-gc --import tsx services/compactor/bench/memory.ts [sessions] [turns]
//
// With STATE_RETENTION_MS set, it also waits out the retention once every turn is read, and reports
// Redis's memory once the idle sessions' windows have expired (bounded state).
//
// Needs the local stack (pnpm infra:up). Uses topics and Redis keys of its own, removed at the end.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Bus, provisionTopics, topicNames } from '@tidemark/contract';
import { generateSession, type TurnEvent } from '@tidemark/core';
import { createLogger, limitHeapGrowth, Registry } from '@tidemark/service';
import { unlinkMatching } from '@tidemark/state';
import { Redis } from 'ioredis';
import { create as createCompactor } from '../src/compactor.js';
import { compactorConfigSchema } from '../src/config.js';
import { recordFigures } from '../../../bench/figures.js';

const producing = process.argv[2] === 'produce';
const args = producing ? process.argv.slice(3) : process.argv.slice(2);
const sessions = Number(args[0] ?? 10_000);
const turnsPerSession = Number(args[1] ?? 30);
const retentionSet = (process.env.STATE_RETENTION_MS ?? '') !== '';
const command = `${retentionSet ? `STATE_RETENTION_MS=${process.env.STATE_RETENTION_MS} ` : ''}${process.env.HEAP_GROWING_PERCENT === undefined ? '' : `HEAP_GROWING_PERCENT=${process.env.HEAP_GROWING_PERCENT} `}node --expose-gc --import tsx services/compactor/bench/memory.ts ${sessions} ${turnsPerSession}`;
// The load is produced by a child process (this file in produce mode), so that the measuring process
// never holds the turns itself: its RSS is the compactor's.
const run = producing ? args[2]! : randomUUID().slice(0, 8);
const config = compactorConfigSchema.parse({
  ...process.env,
  TOPIC_PREFIX: `bench-${run}.`,
  REDIS_PREFIX: `bench-${run}:`,
  GROUP_ID: `bench-compactor-${run}`,
  LOG_LEVEL: 'warn',
});
const topics = topicNames(config.TOPIC_PREFIX);
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

function settledRss(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss;
}

async function redisUsed(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
}

if (producing) await produce();
else await measure();

/** Every session open at once: turn 1 of all sessions, then turn 2 of all, and so on. */
async function produce(): Promise<void> {
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: `bench-producer-${run}`,
    topics,
    service: 'bench',
  });
  const producer = await bus.producer();
  const all = Array.from({ length: sessions }, (_, i) =>
    generateSession(1_000 + i, { turns: turnsPerSession, sessionId: `bench-${i}` }),
  );
  let heldBytes = 0;
  for (let seq = 0; seq < turnsPerSession; seq++) {
    const round: TurnEvent[] = all.map((turns) => turns[seq]!);
    for (const turn of round) heldBytes += JSON.stringify(turn).length;
    for (let i = 0; i < round.length; i += 2_000) await producer.send('turns', round.slice(i, i + 2_000));
  }
  await bus.disconnect();
  process.stdout.write(`held-bytes ${heldBytes}\n`);
}

async function measure(): Promise<void> {
  // A long run shows its progress: every 10 s, on stderr, the step it is at.
  const started = performance.now();
  let step = 'connecting to Kafka and the registry';
  const progress = setInterval(() => {
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    process.stderr.write(`  ${seconds} s: ${step}\n`);
  }, 10_000).unref();
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: `bench-${run}`,
    topics,
    service: 'bench',
  });
  const admin = await bus.admin();
  const redis = new Redis(config.REDIS_URL);
  try {
    step = 'creating topics';
    await provisionTopics(admin, topics, { partitions: 4 });
    const total = sessions * turnsPerSession;
    const redisBefore = await redisUsed(redis);
    const registry = new Registry();
    // As the compactor's own process does (runMain): the heap's growth bounded (HEAP_GROWING_PERCENT).
    limitHeapGrowth(config.HEAP_GROWING_PERCENT);
    const compactor = createCompactor(config, { logger: createLogger('bench', 'warn'), metrics: registry });
    step = 'starting the compactor';
    await compactor.run();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const baseline = settledRss();
    const baselineHeap = process.memoryUsage().heapUsed;

    let peak = baseline;
    let atPeak = process.memoryUsage();
    const sampler = setInterval(() => {
      const usage = process.memoryUsage();
      if (usage.rss > peak) [peak, atPeak] = [usage.rss, usage];
    }, 100);
    step = 'starting the producer';
    const began = performance.now();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(import.meta.url),
        'produce',
        String(sessions),
        String(turnsPerSession),
        run,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    // The producer's stdout carries its one figure; anything else it prints is passed on to stderr.
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      process.stderr.write(chunk.toString().replace(/^held-bytes \d+\n/m, ''));
    });
    let exitCode: number | null | undefined;
    const produced = new Promise<number>((resolve) =>
      child.once('exit', (code) => {
        exitCode = code;
        resolve(Number(/^held-bytes (\d+)$/m.exec(out)?.[1] ?? NaN));
      }),
    );
    const read = async () =>
      ((await registry.getSingleMetric('tidemark_compactor_turns_total')?.get())?.values ?? []).reduce(
        (sum, v) => sum + v.value,
        0,
      );
    // A failed producer ends the run at once.
    for (let done = await read(); done < total; done = await read()) {
      if (exitCode !== undefined && exitCode !== 0) {
        throw new Error(
          `the producer exited with code ${exitCode} after ${done} of ${total} turns were read`,
        );
      }
      const producer = exitCode === undefined ? 'producing' : 'done producing';
      step = `the compactor has read ${done} of ${total} turns (${producer})`;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    step = 'every turn read; measuring';
    const seconds = (performance.now() - began) / 1000;
    const heldBytes = await produced;
    clearInterval(sampler);
    const loaded = settledRss();
    const settled = process.memoryUsage();
    const loadedHeap = settled.heapUsed;
    const windows =
      (await registry.getSingleMetric('tidemark_compactor_windows')?.get())?.values[0]?.value ?? 0;
    const redisAfter = await redisUsed(redis);
    let redisExpired: number | null = null;
    if (retentionSet && config.STATE_RETENTION_MS > 0) {
      // Every session is idle now: its keys expire a retention after its last batch.
      step = `waiting out STATE_RETENTION_MS (${config.STATE_RETENTION_MS} ms)`;
      await new Promise((resolve) => setTimeout(resolve, config.STATE_RETENTION_MS + 2_000));
      redisExpired = await redisUsed(redis);
    }
    step = 'stopping the compactor';
    await compactor.stop();

    console.log(
      `compactor memory: ${sessions} concurrent sessions x ${turnsPerSession} turns (${total} turns)`,
    );
    console.log(
      `  produced and consumed in ${seconds.toFixed(1)} s (${Math.round(total / seconds)} turns/s)`,
    );
    console.log(`  open windows (gauge): ${windows}`);
    console.log(`  RSS baseline (compactor started, no turn read): ${mib(baseline)} MiB`);
    console.log(
      `  RSS after every turn read (after GC):          ${mib(loaded)} MiB  (x${(loaded / baseline).toFixed(2)})`,
    );
    console.log(
      `  RSS peak while reading:                        ${mib(peak)} MiB  (x${(peak / baseline).toFixed(2)})`,
    );
    console.log(`  RSS growth per open session: ${Math.round((loaded - baseline) / sessions)} bytes`);
    // Live JS data, after a GC: what the process holds (RSS also keeps pages V8 and malloc do not return).
    console.log(
      `  V8 heap used: baseline ${mib(baselineHeap)} MiB, after ${mib(loadedHeap)} MiB (${Math.round((loadedHeap - baselineHeap) / sessions)} bytes per open session)`,
    );
    // Where RSS goes: V8's heap as committed (used or not), and memory outside it (Buffers included).
    const parts = (usage: NodeJS.MemoryUsage) =>
      `heap committed ${mib(usage.heapTotal)}, used ${mib(usage.heapUsed)}; external ${mib(usage.external)} (Buffers ${mib(usage.arrayBuffers)}); the rest ${mib(usage.rss - usage.heapTotal - usage.external)} MiB`;
    console.log(`  at the peak:   ${parts(atPeak)}`);
    console.log(`  after GC:      ${parts(settled)}`);
    console.log(
      `  the open windows' turns as JSON (what in-process windows would hold): ${mib(heldBytes)} MiB`,
    );
    console.log(`  Redis used_memory growth (the windows live there): ${mib(redisAfter - redisBefore)} MiB`);
    if (redisExpired !== null) {
      console.log(
        `  Redis used_memory growth once every session was idle past STATE_RETENTION_MS: ${mib(redisExpired - redisBefore)} MiB`,
      );
    }
    console.log(`  command: ${command}`);
    recordFigures('compactor-memory', {
      sessions,
      turnsPerSecond: total / seconds,
      rssPeakMiB: peak / 2 ** 20,
      rssSettledMiB: loaded / 2 ** 20,
      command,
    });
  } finally {
    step = 'removing the keys and topics of the run';
    // Remove what the run made: its Redis keys and its topics.
    await unlinkMatching(redis, `${config.REDIS_PREFIX}*`);
    await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
    await bus.disconnect();
    redis.disconnect();
    clearInterval(progress);
  }
}
