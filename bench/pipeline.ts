import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
// The repository root is not a workspace package (it has no dependencies of its own), so the bench
// reaches the packages through their public index files, and kafkajs through the contract's Bus.
import {
  dropDeployment,
  Journal,
  startPipeline,
  waitUntilReady,
  type Env,
} from '../services/cli/src/index.js';
import {
  Bus,
  createPublisher,
  provisionTopics,
  encodeBody,
  frame,
  sessionKey,
  topicNames,
  type TopicNames,
} from '../libs/contract/src/index.js';
import {
  definePolicy,
  runReference,
  foldDecisions,
  trustedMarkers,
  type MarkerDecision,
  type TurnEvent,
} from '../libs/core/src/index.js';
import { generateWorkload } from '../libs/scenarios/src/index.js';
import { Redis } from 'ioredis';
import { cpuMeter, describeCpu } from './cpu.js';
import { describeSelfTime, mainProfileIn, readProfile, selfTime } from './cpu-profile.js';
import { sameShape } from './shape.js';
import { commonConfig, createLogger, parseConfig, z } from '../libs/service/src/index.js';

// End-to-end pipeline throughput (design.md, "Targets"): the same turns through (1) a bare kafkajs
// produce→consume passthrough and (2) the whole Tidemark pipeline in this one process (materializer,
// compactor, validator, resume), on the same broker in the same run, reported as a ratio (target ≥ 0.8),
// plus the validation latency (compaction record timestamp → its first decision's record timestamp).
// Everything runs on topics and Redis keys of its own and is removed afterwards.
//
//   pnpm exec tsx bench/pipeline.ts [--sessions 200] [--turns 500] [--rate 0] [--partitions 4] [--seed 1] [--timeline] [--processes]
//   pnpm bench:pipeline --help      (the options)
//
// --processes runs each service in its own process (as in production) instead of all four in this one.
//
// --rate N offers N turns/s (paced, both legs) instead of as fast as possible: the throughput ratio is
// then meaningless (both legs run at the offered rate), but the latency is the one the 1,000 turns/s
// target is stated at.

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

type Kafka = Bus['kafka'];
interface Message {
  readonly key: string;
  readonly value: Buffer;
}

// The options, for the parser and for --help. An option the bench does not know, or a value out of
// range, is one line on stderr and exit code 2, before anything touches the stack.
const options = {
  sessions: { type: 'string', default: '200' },
  turns: { type: 'string', default: '500' },
  rate: { type: 'string', default: '0' },
  partitions: { type: 'string', default: '4' },
  seed: { type: 'string', default: '1' },
  timeline: { type: 'boolean', default: false },
  processes: { type: 'boolean', default: false },
  'cpu-prof': { type: 'string', default: '' },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];
const described: Record<keyof typeof options, string> = {
  sessions: 'sessions in the workload, of one tenant',
  turns: 'turns per session',
  rate: 'offered turns/s in both legs, paced; 0 offers as fast as possible',
  partitions: 'partitions of the baseline topic and of the pipeline topics',
  seed: 'the workload seed and its interleaving',
  timeline: 'print every stage sample (one per 250 ms)',
  processes: 'run each service in its own process instead of all four in this one',
  'cpu-prof':
    "with --processes: write each service's V8 CPU profile under this directory and print its top self-time functions",
  help: 'print these options and exit',
};

function usage(): string {
  const rows = Object.entries(options).map(([name, option]) => {
    const value = name === 'cpu-prof' ? ' <dir>' : ' <n>';
    const flag = `${'short' in option ? `-${option.short}, ` : ''}--${name}${option.type === 'string' ? value : ''}`;
    const text = described[name as keyof typeof options];
    const shown = option.type === 'string' && option.default !== '';
    return [flag, shown ? `${text} (default ${option.default})` : text] as const;
  });
  const width = Math.max(...rows.map(([flag]) => flag.length));
  return [
    'Usage: pnpm bench:pipeline [options]   (= pnpm exec tsx bench/pipeline.ts [options])',
    '',
    'Pipeline throughput against a bare kafkajs passthrough, and the validation latency, on the',
    'stack the environment names (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL; the local one',
    'by default: pnpm infra:up). See bench/README.md.',
    '',
    'Options:',
    ...rows.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
    '',
  ].join('\n');
}

function refuse(message: string): never {
  process.stderr.write(`bench/pipeline.ts: ${message} (--help lists the options)\n`);
  process.exit(2);
}

function readFlags(args: string[]) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message = error instanceof Error ? error.message : String(error);
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      refuse(`unknown option ${/'[^']*'/.exec(message)?.[0] ?? message}`);
    }
    if (code?.startsWith('ERR_PARSE_ARGS_') === true) refuse(message.split('. ')[0] ?? message);
    throw error;
  }
}

const flags = readFlags(process.argv.slice(2));
if (flags.help) {
  process.stdout.write(usage());
  process.exit(0);
}
const positive = (name: string, raw: string, min = 1): number => {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) refuse(`--${name} must be an integer ≥ ${min}`);
  return value;
};
const sessions = positive('sessions', flags.sessions);
const turnsPerSession = positive('turns', flags.turns);
const rate = positive('rate', flags.rate, 0);
const partitions = positive('partitions', flags.partitions);
const seed = positive('seed', flags.seed);
const profileDir = flags['cpu-prof'] === '' ? null : path.resolve(flags['cpu-prof']);
if (profileDir !== null && !flags.processes) refuse('--cpu-prof needs --processes (one profile per service)');
const command = `pnpm exec tsx bench/pipeline.ts ${process.argv.slice(2).join(' ')}`.trim();

const config = parseConfig(z.object(commonConfig), process.env);
const run = randomUUID().slice(0, 8);
const prefix = `bench-${run}.`;
const redisPrefix = `bench-${run}:`;
const tenantId = 'bench';
const policy = definePolicy({});
const maxRepairs = 1;
const batchSize = 500;
// Errors only: the services' start-up warnings (rebuilding an absent store, …) are expected on fresh keys.
const logger = createLogger('bench', 'error');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => (ms / 1000).toFixed(2);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** mulberry32: a deterministic interleaving for a given --seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * Offers `total` items in chunks: back to back when unpaced (the sender's own back-pressure decides),
 * else one chunk every 50 ms at the offered rate. Resolves when every send has resolved.
 */
async function offer(total: number, send: (from: number, to: number) => Promise<unknown>): Promise<void> {
  const sends: Promise<unknown>[] = [];
  if (rate === 0) {
    for (let from = 0; from < total; from += batchSize) {
      sends.push(send(from, Math.min(total, from + batchSize)));
      // Yield between chunks: the publisher encodes a chunk synchronously, and encoding every turn in
      // one tick would hold the event loop (and every service in it) for about a second.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } else {
    const chunk = Math.max(1, Math.round(rate / 20));
    const began = performance.now();
    for (let from = 0; from < total; from += chunk) {
      const due = began + (from / rate) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      sends.push(send(from, Math.min(total, from + chunk)));
    }
  }
  await Promise.all(sends);
}

/** (1) A bare kafkajs passthrough: an idempotent producer (acks -1) and one eachBatch consumer. */
async function passthrough(kafka: Kafka, messages: readonly Message[], label: string): Promise<number> {
  const topic = `${prefix}baseline-${label}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
  });
  const consumer = kafka.consumer({ groupId: `${topic}-group` });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  try {
    await Promise.all([consumer.connect(), producer.connect()]);
    await consumer.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    let consumed = 0;
    let last = 0;
    let allConsumed = () => undefined as void;
    const done = new Promise<void>((resolve) => (allConsumed = resolve));
    await consumer.run({
      eachBatch: ({ batch }) => {
        consumed += batch.messages.length;
        if (consumed >= messages.length && last === 0) {
          last = performance.now();
          allConsumed();
        }
        return Promise.resolve();
      },
    });
    await joined;
    const first = performance.now();
    // One send at a time, like the publisher: a session's records cannot overtake each other.
    let sending: Promise<unknown> = Promise.resolve();
    await offer(messages.length, (from, to) => {
      sending = sending.then(() => producer.send({ topic, acks: -1, messages: messages.slice(from, to) }));
      return sending;
    });
    await done;
    return (messages.length / (last - first)) * 1000;
  } finally {
    await Promise.all([consumer.disconnect(), producer.disconnect()]);
    await admin.deleteTopics({ topics: [topic], timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
  }
}

interface StageSample {
  readonly at: number;
  readonly turns: number;
  readonly materialized: number;
  readonly compacted: number;
  readonly compactions: number;
  readonly validated: number;
  readonly markers: number;
  readonly resumed: number;
}

/** Per-topic high-water marks and per-group committed offsets, sampled while the pipeline runs. */
async function sampleStages(kafka: Kafka, topics: TopicNames) {
  const admin = kafka.admin();
  const samples: StageSample[] = [];
  let running = true;
  let began = 0;
  const high = async (topic: string) =>
    (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  // The group names startPipeline gives the services (groupsFor in services/cli: `${TOPIC_PREFIX}tidemark-<service>`).
  const committed = async (service: string, topic: string) => {
    const [offsets] = await admin.fetchOffsets({ groupId: `${prefix}tidemark-${service}`, topics: [topic] });
    return (offsets?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
  };
  const sample = async () => {
    const [turns, materialized, compacted, compactions, validated, markers, resumed] = await Promise.all([
      high(topics.turns),
      committed('materializer', topics.turns),
      committed('compactor', topics.turns),
      high(topics.compactions),
      committed('validator', topics.compactions),
      high(topics.markers),
      committed('resume', topics.markers),
    ]);
    // Stamped once every answer is in: a stage is never credited with progress before it was seen.
    const at = performance.now() - began;
    samples.push({ at, turns, materialized, compacted, compactions, validated, markers, resumed });
  };
  // Connected before the clock starts, so the first sample is taken at once.
  await admin.connect();
  let loop: Promise<void> = Promise.resolve();
  const start = (at: number) => {
    began = at;
    loop = run();
  };
  const run = async () => {
    while (running) {
      await sample();
      await sleep(250);
    }
    // One more once everything has settled, so the last row holds the final counts.
    await sample();
    await admin.disconnect();
  };
  return {
    samples,
    start,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

async function main(): Promise<void> {
  const loadBefore = load();
  const workload = generateWorkload({ tenantId, sessions, turns: turnsPerSession, seed });
  // Sessions run concurrently in real use: offer their turns randomly interleaved (each session's in
  // order). Not round-robin: that brings every session to a compaction boundary at the same moment.
  const order = workload.flatMap((_, index) => Array<number>(turnsPerSession).fill(index));
  const random = seededRandom(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const next = workload.map(() => 0);
  const interleaved: TurnEvent[] = order.map((index) => workload[index]![next[index]!++]!);
  const total = interleaved.length;
  const references = workload.map((turns) => runReference(turns, { policy, generation: 1, maxRepairs }));

  const env: Env = {
    KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
    SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
    REDIS_URL: config.REDIS_URL,
    TOPIC_PREFIX: prefix,
    REDIS_PREFIX: redisPrefix,
    LOG_LEVEL: 'error',
    PARTITIONS: String(partitions),
    MAX_REPAIRS: String(maxRepairs),
    POLICY_OVERRIDES: JSON.stringify({ [tenantId]: policy }),
  };
  const topics = topicNames(prefix);
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: `bench-${run}`,
    topics,
    service: 'bench',
    logger,
  });
  // The baseline sends the very bytes the publisher sends (registry-framed Avro), with the same keys.
  const schemaId = await bus.registry.idFor(topics.turns, 'TurnEvent');
  const messages: Message[] = interleaved.map((turn) => ({
    key: sessionKey(turn.tenantId, turn.sessionId),
    value: frame(schemaId, encodeBody('TurnEvent', turn)),
  }));
  const meanBytes = messages.reduce((sum, m) => sum + m.key.length + m.value.length, 0) / total;
  process.stderr.write(
    `bench ${run}: ${sessions} sessions × ${turnsPerSession} turns = ${total} turns, ${meanBytes.toFixed(0)} B per record\n`,
  );

  process.stderr.write('baseline (before)…\n');
  const passthroughCpu = cpuMeter();
  const baselineBefore = await passthrough(bus.kafka, messages, 'before');
  const passthroughReading = passthroughCpu.stop();

  process.stderr.write('same shape…\n');
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
  const shapeCpu = cpuMeter();
  const shapeRate = await sameShape({
    kafka: bus.kafka,
    redis,
    prefix: `${prefix}shape-`,
    partitions,
    messages,
    offer,
  }).finally(() => redis.quit());
  const shapeReading = shapeCpu.stop();

  process.stderr.write(`starting the pipeline${flags.processes ? ' (one process per service)' : ''}…\n`);
  const pipeline = flags.processes ? await serviceProcesses(env, bus) : await oneProcess(env);
  let outcome: string[] = [];
  try {
    const keys = workload.map((turns) => sessionKey(tenantId, turns[0]!.sessionId));
    const journal = await Journal.open(pipeline.bus, keys);
    // The journal keeps no Kafka timestamps: a tail of our own, through the contract's consumer (which
    // hands over each record's timestamp), for the latency.
    const appended = new Map<string, number>();
    const decided = new Map<string, number>();
    let lastDecision = 0;
    const tails = [
      bus.consumer({
        groupId: `${prefix}bench-compactions`,
        role: 'compactions',
        onBatch: (records) => {
          for (const { raw, value } of records)
            if (!appended.has(value.compactionId)) appended.set(value.compactionId, raw.timestamp ?? 0);
          return Promise.resolve();
        },
      }),
      bus.consumer({
        groupId: `${prefix}bench-markers`,
        role: 'markers',
        onBatch: (records) => {
          for (const { raw, value } of records) {
            const at = raw.timestamp ?? 0;
            if (!decided.has(value.compactionId)) decided.set(value.compactionId, at);
            lastDecision = Math.max(lastDecision, at);
          }
          return Promise.resolve();
        },
      }),
    ];
    await Promise.all(tails.map((t) => t.run()));
    const publisher = await createPublisher({
      brokers: config.KAFKA_BROKERS,
      registryUrl: config.SCHEMA_REGISTRY_URL,
      clientId: `bench-${run}-publisher`,
      topicPrefix: prefix,
      logger,
    });
    await journal.caughtUp();

    process.stderr.write('tidemark…\n');
    const stages = await sampleStages(bus.kafka, topics);
    const tidemarkCpu = cpuMeter(() => pipeline.pids ?? []);
    const firstPublish = performance.now();
    const firstPublishEpoch = Date.now();
    stages.start(firstPublish);
    await offer(total, (from, to) => publisher.publishTurns(interleaved.slice(from, to)));
    const published = performance.now();
    await publisher.close();

    // Settled: every session holds every compaction and every decision its core reference produces.
    const pending = new Set(workload.map((_, index) => index));
    const deadline = Date.now() + 600_000;
    while (pending.size > 0 && Date.now() < deadline) {
      for (const index of pending) {
        const reference = references[index]!;
        const seen = journal.session(tenantId, workload[index]![0]!.sessionId);
        const compactions = new Set(seen.compactions.map((c) => c.compactionId));
        const markers = new Set(seen.decisions.map((d) => d.markerId));
        if (
          reference.compactions.every((c) => compactions.has(c.compactionId)) &&
          reference.decisions.every((d) => markers.has(d.markerId))
        )
          pending.delete(index);
      }
      if (pending.size > 0) await sleep(20);
    }
    const settled = performance.now();
    const tidemarkReading = tidemarkCpu.stop();
    await stages.stop();
    if (pending.size > 0) throw new Error(`${pending.size} sessions did not settle within 10 minutes`);
    await Promise.all(tails.map((t) => t.stop()));
    await journal.close();

    // What a resume trusts must be what the reference trusts (the bench measures a correct pipeline).
    const trusted = (decisions: readonly MarkerDecision[]) =>
      trustedMarkers(foldDecisions(decisions))
        .map((d) => d.markerId)
        .sort()
        .join(',');
    const mismatched = workload.filter(
      (turns, index) =>
        trusted(journal.session(tenantId, turns[0]!.sessionId).decisions) !==
        trusted(references[index]!.decisions),
    ).length;

    const latencies = [...appended]
      .filter(([id]) => decided.has(id))
      .map(([id, at]) => decided.get(id)! - at)
      .sort((a, b) => a - b);
    const compactionCount = references.reduce((n, r) => n + r.compactions.length, 0);
    const decisionCount = references.reduce((n, r) => n + r.decisions.length, 0);
    const tidemarkRate = (total / (settled - firstPublish)) * 1000;

    process.stderr.write('baseline (after)…\n');
    const baselineAfter = await passthrough(bus.kafka, messages, 'after');
    const baseline = (baselineBefore + baselineAfter) / 2;

    const doneAt = (pick: (s: StageSample) => number, want: number) => {
      const sample = stages.samples.find((s) => pick(s) >= want);
      return sample === undefined ? '>end' : `${seconds(sample.at)} s`;
    };
    const last = stages.samples[stages.samples.length - 1];
    const compactionsTotal = last?.compactions ?? 0;
    const markersTotal = last?.markers ?? 0;
    outcome = [
      `Tidemark pipeline benchmark — ${sessions} sessions × ${turnsPerSession} turns = ${total} turns (${meanBytes.toFixed(0)} B per record), ${partitions} partitions, offered ${rate === 0 ? 'as fast as possible' : `${rate} turns/s`}`,
      `  baseline, kafkajs passthrough: ${baselineBefore.toFixed(0)} msg/s before, ${baselineAfter.toFixed(0)} msg/s after (mean ${baseline.toFixed(0)} msg/s)`,
      `  tidemark, whole pipeline:      ${tidemarkRate.toFixed(0)} turns/s (${total} turns settled in ${seconds(settled - firstPublish)} s; published in ${seconds(published - firstPublish)} s)`,
      `  ratio tidemark / baseline:     ${(tidemarkRate / baseline).toFixed(3)} (design target ≥ 0.8)`,
      `  same shape (kafkajs + ioredis, Tidemark's topology, no logic, one process): ${shapeRate.toFixed(0)} turns/s`,
      `  CPU, passthrough: ${describeCpu(passthroughReading, total)}`,
      `  CPU, same shape:  ${describeCpu(shapeReading, total)}`,
      `  CPU, tidemark:    ${describeCpu(tidemarkReading, total)}${flags.processes ? '' : " — this process includes the bench's observers"}`,
      `  tidemark ÷ same shape: CPU per turn ${(tidemarkReading.total / shapeReading.total).toFixed(2)}× (target ≤ 1.25×), throughput ${(tidemarkRate / shapeRate).toFixed(2)} (target ≥ 0.8)`,
      `  validation latency (compaction record → first decision record, n=${latencies.length}): p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies[latencies.length - 1] ?? Number.NaN} ms`,
      `  last decision appended ${seconds(lastDecision - firstPublishEpoch)} s after the first publish; ${compactionCount} compactions and ${decisionCount} decisions per the core reference, ${compactionsTotal} compactions and ${markersTotal} decisions on the topics`,
      `  stages caught up (s after the first publish): turns.l0 written ${doneAt((s) => s.turns, total)}, materializer ${doneAt((s) => s.materialized, total)}, compactor ${doneAt((s) => s.compacted, total)}, validator ${doneAt((s) => s.validated, compactionsTotal)}, resume ${doneAt((s) => s.resumed, markersTotal)}`,
      `  sessions whose trusted markers differ from the core reference: ${mismatched}`,
      `  load average (1/5/15 min, ${cpus().length} CPUs): ${loadBefore} before, ${load()} after`,
      `  command: ${command}`,
    ];
    if (flags.timeline) {
      outcome.push(
        '',
        '  t (s) | turns.l0 | materializer | compactor | compactions | validator | markers | resume',
        ...stages.samples.map(
          (s) =>
            `  ${seconds(s.at).padStart(5)} | ${String(s.turns).padStart(8)} | ${String(s.materialized).padStart(12)} | ${String(s.compacted).padStart(9)} | ${String(s.compactions).padStart(11)} | ${String(s.validated).padStart(9)} | ${String(s.markers).padStart(7)} | ${String(s.resumed).padStart(6)}`,
        ),
      );
    }
  } finally {
    await pipeline.stop();
    await bus.disconnect();
    await dropDeployment(env).catch(() => undefined);
  }
  if (profileDir !== null) outcome.push('', ...profiles(profileDir));
  process.stdout.write(`${outcome.join('\n')}\n`);
}

/** Each service's top self-time functions, from the profiles it wrote as it exited. */
function profiles(dir: string): string[] {
  return serviceNames.flatMap((name) => {
    const file = mainProfileIn(path.join(dir, name));
    if (file === null) return [`${name}: no profile written`];
    return describeSelfTime(`${name} (${path.relative(process.cwd(), file)})`, selfTime(readProfile(file)));
  });
}

/** The pipeline as the bench drives it: a bus on its topics, and a way to stop it. */
interface RunningPipeline {
  readonly bus: Bus;
  /** The services' processes (none when they run in this one). */
  readonly pids?: readonly number[];
  stop(): Promise<void>;
}

/** The four services in this process (the all-in-one `tidemark start`). */
async function oneProcess(env: Env): Promise<RunningPipeline> {
  const pipeline = await startPipeline({ env, logger: createLogger('bench', 'error'), port: 0 });
  await waitUntilReady(pipeline.host);
  return pipeline;
}

const serviceNames = ['materializer', 'compactor', 'validator', 'resume'] as const;

/**
 * Each service in its own process, as in production, so the machine's cores are all used: `node --import
 * tsx services/<name>/src/main.ts`, ready when its /readyz answers 200.
 */
async function serviceProcesses(env: Env, bus: Bus): Promise<RunningPipeline> {
  await provisionTopics(await bus.admin(), bus.topics, { partitions });
  const children = serviceNames.map((name, index) => {
    // A profile is written when the process exits (the graceful stop below).
    const profile = profileDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', path.join(profileDir, name)];
    const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'src/main.ts'], {
      cwd: fileURLToPath(new URL(`../services/${name}/`, import.meta.url)),
      env: { ...process.env, ...env, HTTP_PORT: String(17_410 + index) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return { name, child, url: `http://127.0.0.1:${17_410 + index}/readyz` };
  });
  const stop = async () => {
    await Promise.all(
      children.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
            child.once('exit', () => {
              clearTimeout(force);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
  };
  const deadline = Date.now() + 90_000;
  for (const { name, url } of children) {
    for (;;) {
      const ready = await fetch(url).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`${name} not ready after 90 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return { bus, stop, pids: children.map(({ child }) => child.pid!).filter((pid) => pid !== undefined) };
}

await main();
