// The validator's figures, against the real stack (Kafka, registry, Redis of `pnpm infra:up`):
//
//   1. Decision latency under a steady offered load: compaction record appended → decision record appended,
//      both from the Kafka record timestamps, p50/p99; against a baseline measured in the same run on the
//      same bus: an "echo" consumer that publishes a MarkerEmitted for every compaction without reading
//      Redis or deciding anything (the bus's own floor).
//   2. The cost of one check in a session with 100 prior turns vs 100,000 (same check, same span length):
//      one batch of one compaction through decideBatch (frame load, watermark, stateAt, decide, record,
//      confirm) with Redis real and the publish left out, p50/p99 and the ratio.
//
// Run: pnpm exec tsx services/validator/bench/validator.bench.ts [--rate 50] [--sessions 40] [--turns 400]
//      [--long 100000] [--checks 300]
import { randomUUID } from 'node:crypto';
import {
  boundaryQuery,
  buildCompaction,
  definePolicy,
  foldTurns,
  generateSession,
  foldDecisions,
  isVerdict,
  markerEmitted,
  markerInvalid,
  runReference,
  summarizeStrict,
  summaryQuery,
  type Compaction,
  type MarkerEmitted,
  type TurnEvent,
} from '@tidemark/core';
import { Bus, decodeRecord, provisionTopics, topicNames, type TopicNames } from '@tidemark/contract';
import { FrameStore, Projection } from '@tidemark/state';
import { createLogger, parseConfig, Registry } from '@tidemark/service';
import { Redis } from 'ioredis';
import { integer, readFlags } from '../../../bench/options.js';
import { decideBatch } from '../src/index.js';
import { validatorConfigSchema } from '../src/config.js';
import { validatorMetrics } from '../src/metrics.js';
import { create as createValidator } from '../src/validator.js';

const script = 'services/validator/bench/validator.bench.ts';
const args = readFlags(
  {
    script,
    invocation: 'pnpm --filter @tidemark/validator bench --',
    about: [
      'The validator: decision latency under a steady offered load against an echo baseline on the same',
      'bus, and the cost of one check with 100 prior turns against one with --long prior turns, on the stack',
      'the environment names (the local one by default: pnpm infra:up).',
    ],
    options: {
      rate: { type: 'string', default: '50' },
      sessions: { type: 'string', default: '40' },
      turns: { type: 'string', default: '400' },
      long: { type: 'string', default: '100000' },
      checks: { type: 'string', default: '300' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    described: {
      rate: 'compactions offered per second in the latency run',
      sessions: 'sessions in the latency run',
      turns: 'turns per session in the latency run',
      long: 'prior turns of the long session in the check-cost run',
      checks: 'checks timed per session length',
      help: 'this text',
    },
  },
  process.argv.slice(2),
);
const rate = integer(script, 'rate', args.rate);
const sessionCount = integer(script, 'sessions', args.sessions);
const turnsPerSession = integer(script, 'turns', args.turns);
const longTurns = integer(script, 'long', args.long);
const checks = integer(script, 'checks', args.checks);

const base = parseConfig(validatorConfigSchema, process.env);
const runId = randomUUID().slice(0, 8);
const logger = createLogger('validator-bench', 'silent');
const policy = definePolicy();

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}
const ms = (value: number) => `${value.toFixed(2)} ms`;

async function connect(topics: TopicNames): Promise<Bus> {
  const bus = await Bus.connect({
    brokers: base.KAFKA_BROKERS,
    registryUrl: base.SCHEMA_REGISTRY_URL,
    clientId: `validator-bench-${runId}`,
    topics,
    service: 'validator-bench',
  });
  const admin = bus.kafka.admin();
  await admin.connect();
  await provisionTopics(admin, topics, { partitions: 4 });
  await admin.disconnect();
  return bus;
}

async function deleteTopics(bus: Bus): Promise<void> {
  const admin = bus.kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: Object.values(bus.topics) }).catch(() => undefined);
  await admin.disconnect();
}

/** Reads a role's topic with the record timestamps (the bus hands records over without them). */
async function timestamps<R extends 'compactions' | 'markers'>(
  bus: Bus,
  role: R,
  onRecord: (value: R extends 'compactions' ? Compaction : MarkerEmitted, appendedAt: number) => void,
) {
  const consumer = bus.kafka.consumer({ groupId: `bench-${role}-${randomUUID()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: bus.topics[role], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      const raw = {
        topic,
        partition,
        offset: Number(message.offset),
        key: message.key,
        value: message.value,
      };
      const decoded = await decodeRecord(role, raw, (id) => bus.registry.writer(id), 1 << 20);
      if (decoded.ok) onRecord(decoded.value as never, Number(message.timestamp));
    },
  });
  return consumer;
}

// ---------------------------------------------------------------------------------------------------
// 1. Latency under a steady offered load

interface Workload {
  readonly turns: TurnEvent[];
  readonly compactions: Compaction[];
  readonly verdicts: number;
}

function workload(): Workload {
  const turns: TurnEvent[] = [];
  const compactions: Compaction[] = [];
  let verdicts = 0;
  for (let s = 0; s < sessionCount; s++) {
    const session = generateSession(1000 + s, {
      tenantId: 'bench',
      sessionId: `load-${s}`,
      turns: turnsPerSession,
    });
    const run = runReference(session, { policy });
    turns.push(...session);
    compactions.push(...run.compactions);
    verdicts += run.decisions.filter(isVerdict).length;
  }
  // Interleaved the way live traffic is (round-robin across sessions), each session's order kept.
  const bySession = new Map<string, Compaction[]>();
  for (const c of compactions) bySession.set(c.sessionId, [...(bySession.get(c.sessionId) ?? []), c]);
  const interleaved: Compaction[] = [];
  for (let i = 0; interleaved.length < compactions.length; i++) {
    for (const list of bySession.values()) if (list[i] !== undefined) interleaved.push(list[i]!);
  }
  return { turns, compactions: interleaved, verdicts };
}

async function offer(bus: Bus, compactions: readonly Compaction[]): Promise<number> {
  const producer = await bus.producer();
  const interval = 1000 / rate;
  const started = performance.now();
  for (let i = 0; i < compactions.length; i++) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // One compaction per send: every decision is measured alone, as a compactor publishes them.
    await producer.send('compactions', [compactions[i]!]);
  }
  return (performance.now() - started) / 1000;
}

async function latencyRun(
  label: string,
  load: Workload,
  start: (bus: Bus, topics: TopicNames, redisPrefix: string) => Promise<() => Promise<void>>,
): Promise<number[]> {
  const topics = topicNames(`bench-${runId}-${label}.`);
  const bus = await connect(topics);
  const redis = new Redis(base.REDIS_URL);
  const redisPrefix = `bench-${runId}-${label}:`;
  await new Projection(redis, { prefix: redisPrefix }).applyBatch(
    load.turns.map((turn) => ({ turn, partition: 0, offset: turn.seq - 1 })),
  );
  const appended = new Map<string, number>();
  const latencies: number[] = [];
  const compactionReader = await timestamps(bus, 'compactions', (c, at) =>
    appended.set(c.marker.markerId, at),
  );
  const pending: { markerId: string; at: number }[] = [];
  const markerReader = await timestamps(bus, 'markers', (m, at) => {
    if (isVerdict(m)) pending.push({ markerId: m.markerId, at });
  });
  const stop = await start(bus, topics, redisPrefix);
  const seconds = await offer(bus, load.compactions);
  const deadline = Date.now() + 60_000;
  while (latencies.length < load.compactions.length && Date.now() < deadline) {
    for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
      const at = appended.get(next.markerId);
      if (at === undefined) pending.unshift(next);
      else latencies.push(next.at - at);
      if (at === undefined) break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  console.log(
    `  ${label}: ${load.compactions.length} compactions offered at ${rate}/s over ${seconds.toFixed(1)} s, ` +
      `${latencies.length} decisions measured`,
  );
  await Promise.all([stop(), compactionReader.disconnect(), markerReader.disconnect()]);
  await deleteTopics(bus);
  await bus.disconnect();
  const keys = await redis.keys(`${redisPrefix}*`);
  for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
  redis.disconnect();
  return latencies;
}

// ---------------------------------------------------------------------------------------------------
// 2. One check after 100 vs 100,000 prior turns

interface CheckTimes {
  /** One batch of one fresh compaction through decideBatch. */
  readonly decide: number[];
  /** Projection.stateAt of the boundary alone. */
  readonly stateAt: number[];
  /** FrameStore.load of the session and the compaction alone. */
  readonly load: number[];
}

interface CheckBench {
  run(i: number, into: CheckTimes): Promise<void>;
  cleanup(): Promise<void>;
}

async function checkBench(prior: number): Promise<CheckBench> {
  const redis = new Redis(base.REDIS_URL, { enableAutoPipelining: true });
  const prefix = `bench-${runId}-check-${prior}:`;
  const projection = new Projection(redis, { prefix });
  const frames = new FrameStore(redis, { prefix });
  const turns = generateSession(77, { tenantId: 'bench', sessionId: `history-${prior}`, turns: prior + 40 });
  for (let i = 0; i < turns.length; i += 2000) {
    await projection.applyBatch(
      turns.slice(i, i + 2000).map((turn) => ({ turn, partition: 0, offset: turn.seq - 1 })),
    );
  }
  // The measured node: the L1 over the last 40 turns, strict (all claims true); its previous L1 frames
  // the session and is trusted; the store remembers one decided compaction per 40 turns of history.
  const { fold } = foldTurns('bench', `history-${prior}`, turns);
  const summaries = new Map<number, ReturnType<typeof summarizeStrict>>();
  const l1 = (fromSeq: number, toSeq: number, attempt: number, repairOf: string | null): Compaction => {
    let summary = summaries.get(fromSeq);
    if (summary === undefined) {
      const state = fold.stateAt(
        summaryQuery({ tenantId: 'bench', sessionId: `history-${prior}`, fromSeq, toSeq, priorFrame: null }),
      );
      summary = summarizeStrict({
        span: { kind: 'turns', turns: turns.slice(fromSeq - 1, toSeq) },
        state,
        priorFrame: null,
        budget: policy.narrativeTokenBudget,
      });
      summaries.set(fromSeq, summary);
    }
    return buildCompaction({
      tenantId: 'bench',
      sessionId: `history-${prior}`,
      tier: 1,
      generation: 1,
      policy,
      span: { fromSeq, toSeq, l0Partition: 0, fromOffset: fromSeq - 1, toOffset: toSeq - 1 },
      children: [],
      summary,
      summarizer: 'strict',
      compactorVersion: 'bench',
      repairOf,
      attempt,
    });
  };
  const previous = l1(prior - 39, prior, 0, null);
  const node = l1(prior + 1, prior + 40, 0, null);
  if (fold.stateAt(boundaryQuery(node)).appliedSeq !== prior + 40) throw new Error('fold incomplete');
  const baseline = {
    tenantId: 'bench',
    sessionId: `history-${prior}`,
    // The node's marker invalid and its repair asked for: every candidate below is that repair, due.
    state: foldDecisions([
      markerEmitted(previous),
      markerInvalid(
        node,
        [{ condition: 'closure', ids: ['bench'], detail: 'bench: a repair is due' }],
        { markerId: null, compactionId: null, toSeq: 0, l0Partition: 0, l0Offset: null },
        'check',
      ),
    ]),
    published: Array.from({ length: Math.floor(prior / 40) }, (_, i) => `history-compaction-${i}`),
  };
  const epoch = `bench-${runId}`;
  const deps = {
    frames,
    projection,
    publish: () => Promise.resolve(),
    rebuild: () => Promise.resolve(),
    metrics: validatorMetrics(new Registry()),
    logger,
    watermarkTimeoutMs: 1000,
  };
  const query = boundaryQuery(node);
  const ref = { tenantId: 'bench', sessionId: `history-${prior}`, compactionIds: [node.compactionId] };
  return {
    async run(i, into) {
      await frames.restore(epoch, [baseline]); // the same frame state before every check (not timed)
      // A distinct compaction of the same span each time (its n-th repair), so each is a fresh decision.
      const candidate = l1(prior + 1, prior + 40, i + 1, node.compactionId);
      let started = performance.now();
      const outcome = await decideBatch(deps, [{ node: candidate, appendedAt: null }]);
      into.decide.push(performance.now() - started);
      if (outcome.decided !== 1) throw new Error('not decided');
      started = performance.now();
      await projection.stateAt(query);
      into.stateAt.push(performance.now() - started);
      started = performance.now();
      await frames.load([ref]);
      into.load.push(performance.now() - started);
    },
    async cleanup() {
      const keys = await redis.keys(`${prefix}*`);
      for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
      redis.disconnect();
    },
  };
}

// ---------------------------------------------------------------------------------------------------

console.log(`validator bench (run ${runId})`);
console.log(
  'command: pnpm exec tsx services/validator/bench/validator.bench.ts ' + process.argv.slice(2).join(' '),
);

const load = workload();
console.log(
  `1. decision latency: ${sessionCount} sessions × ${turnsPerSession} turns, ${load.compactions.length} compactions, strict policy, turns applied beforehand`,
);
const echo = await latencyRun('echo', load, async (bus) => {
  const producer = await bus.producer();
  const consumer = bus.consumer({
    groupId: `bench-echo-${runId}`,
    role: 'compactions',
    onBatch: async (records) =>
      producer.send(
        'markers',
        records.map((r) => markerEmitted(r.value)),
      ),
  });
  await consumer.run();
  return () => consumer.stop();
});
const validatorRegistry = new Registry();
const validated = await latencyRun('validator', load, async (_bus, topics, redisPrefix) => {
  const config = {
    ...base,
    TOPIC_PREFIX: topics.compactions.slice(0, -'compactions'.length),
    REDIS_PREFIX: redisPrefix,
    VALIDATOR_GROUP_ID: `bench-validator-${runId}`,
    LOG_LEVEL: 'silent' as const,
  };
  const validator = createValidator(config, { logger, metrics: validatorRegistry, provision: false });
  await validator.run();
  return () => validator.stop();
});
const row = (label: string, values: number[]) =>
  console.log(
    `  ${label.padEnd(28)} p50 ${ms(percentile(values, 50)).padStart(10)}   p99 ${ms(percentile(values, 99)).padStart(10)}   max ${ms(Math.max(...values)).padStart(10)}`,
  );
row('echo (bus floor)', echo);
row('validator', validated);
console.log(
  `  ratio validator/echo: p50 ${(percentile(validated, 50) / percentile(echo, 50)).toFixed(2)}×, p99 ${(percentile(validated, 99) / percentile(echo, 99)).toFixed(2)}×`,
);

const histogram = async (name: string) => {
  const metric = (await validatorRegistry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { metricName?: string; value: number }[];
  const sum = values.find((v) => v.metricName === `${name}_sum`)?.value ?? 0;
  const count = values.find((v) => v.metricName === `${name}_count`)?.value ?? 0;
  return `${count} observations, mean ${ms(count === 0 ? 0 : (sum / count) * 1000)}`;
};
console.log(`  validator batches (decideBatch):  ${await histogram('tidemark_validator_batch_seconds')}`);
console.log(
  `  validator latency metric:         ${await histogram('tidemark_validator_decision_latency_seconds')}`,
);
console.log(
  `2. one check (decideBatch of one compaction, Redis real, publish left out), ${checks} checks each, interleaved`,
);
const benches = [await checkBench(100), await checkBench(longTurns)] as const;
const times: [CheckTimes, CheckTimes] = [
  { decide: [], stateAt: [], load: [] },
  { decide: [], stateAt: [], load: [] },
];
const warm: CheckTimes = { decide: [], stateAt: [], load: [] };
// Interleaved, so that the load of a shared machine falls on both alike; the first 20 of each warm up.
for (let i = 0; i < checks + 20; i++) {
  for (const [k, bench] of benches.entries()) await bench.run(i, i < 20 ? warm : times[k]!);
}
for (const bench of benches) await bench.cleanup();
const [short, long] = times;
for (const part of ['decide', 'stateAt', 'load'] as const) {
  row(`${part}, 100 prior turns`, short[part]);
  row(`${part}, ${longTurns} prior turns`, long[part]);
  console.log(
    `  ratio ${longTurns}/100 (${part}): p50 ${(percentile(long[part], 50) / percentile(short[part], 50)).toFixed(2)}×, p99 ${(percentile(long[part], 99) / percentile(short[part], 99)).toFixed(2)}×`,
  );
}
process.exit(0);
