import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
// The repository root is not a workspace package: the bench reaches the packages through their public
// index files.
import { Bus, topicNames } from '../libs/contract/src/index.js';
import { commonConfig, createLogger, parseConfig, z } from '../libs/service/src/index.js';
import type { ProcessMode } from './children.js';
import { stackProcesses, type Watched } from './cpu.js';
import { integer, readFlags, refuse } from './options.js';
import { describeSelfTime, mainProfileIn, readProfile, selfTime } from './cpu-profile.js';
import { passthrough } from './passthrough.js';
import { recordFigures } from './figures.js';
import { headline, median, runRounds, table, type Plan } from './report.js';
import { shapeLeg, shapeLegName } from './shape-leg.js';
import { tidemarkLeg } from './tidemark-leg.js';
import { interleavedWorkload, l0Records, meanRecordBytes } from './workload.js';
import { logicCost } from './logic.js';

// End-to-end pipeline throughput and CPU (design.md, "Targets"): the same turns through (1) a bare
// kafkajs produce→consume passthrough, (2) the same shape — kafkajs + ioredis doing Tidemark's topology
// with no logic (bench/shape.ts), with one Redis pipeline and with one Lua call per batch — and (3) the
// whole Tidemark pipeline (materializer, compactor, validator, resume), in one process or one process
// per service (`--processes`, the shape then one process per group too), on the same broker in the same
// run, medians over interleaved rounds. Each leg reports turns/s and CPU µs per turn summed over every
// process (bench/cpu.ts); a Tidemark row is read against the same shape in the same mode (targets: CPU
// ≤ 1.25×, turns/s ≥ 0.8×). Plus the validation latency (compaction record timestamp → its first
// decision's record timestamp), measured by observers in a process of their own whose CPU is not summed.
// Everything runs on topics and Redis keys of its own and is removed afterwards.
//
//   pnpm exec tsx bench/pipeline.ts [--sessions 200] [--turns 500] [--rounds 3] [--rate 0] [--partitions 4] [--seed 1] [--timeline] [--processes [--instances 1]]
//   pnpm bench:pipeline --help      (the options)
//
// --rate N offers N turns/s (paced, every leg) instead of as fast as possible: the throughput ratios are
// then meaningless (every leg runs at the offered rate), but the latency is the one the 1,000 turns/s
// target is stated at.

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

const script = 'bench/pipeline.ts';
const flags = readFlags(
  {
    script,
    invocation: 'pnpm bench:pipeline',
    about: [
      'Pipeline throughput and CPU per turn against the same shape (kafkajs + ioredis, no logic) and a',
      'bare kafkajs passthrough, and the validation latency, on the stack the environment names',
      '(KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL; the local one by default: pnpm infra:up).',
      'See bench/README.md.',
    ],
    options: {
      sessions: { type: 'string', default: '200' },
      turns: { type: 'string', default: '500' },
      rounds: { type: 'string', default: '3' },
      rate: { type: 'string', default: '0' },
      partitions: { type: 'string', default: '4' },
      instances: { type: 'string', default: '1' },
      seed: { type: 'string', default: '1' },
      timeline: { type: 'boolean', default: false },
      processes: { type: 'boolean', default: false },
      'cpu-prof': { type: 'string', default: '' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    described: {
      sessions: 'sessions in the workload, of one tenant',
      turns: 'turns per session',
      rounds: 'interleaved rounds of every leg; the figures are their medians',
      rate: 'offered turns/s in every leg, paced; 0 offers as fast as possible',
      partitions: 'partitions of every topic',
      instances: 'with --processes: processes of each service, sharing its partitions (a scaling figure)',
      seed: 'the workload seed and its interleaving',
      timeline: 'print every stage sample (one per 250 ms)',
      processes: 'run each service (and each shape group) in its own process instead of all in this one',
      'cpu-prof':
        "with --processes: write each service's V8 CPU profile under this directory and print its top self-time functions",
      help: 'print these options and exit',
    },
  },
  process.argv.slice(2),
);
const sessions = integer(script, 'sessions', flags.sessions);
const turnsPerSession = integer(script, 'turns', flags.turns);
const rounds = integer(script, 'rounds', flags.rounds);
const rate = integer(script, 'rate', flags.rate, 0);
const partitions = integer(script, 'partitions', flags.partitions);
const instances = integer(script, 'instances', flags.instances);
const seed = integer(script, 'seed', flags.seed);
const mode: ProcessMode = flags.processes ? 'processes' : 'one';
const profileDir = flags['cpu-prof'] === '' ? null : path.resolve(flags['cpu-prof']);
if (profileDir !== null && mode !== 'processes') {
  refuse(script, '--cpu-prof needs --processes (one profile per service)');
}
if (instances > 1 && mode !== 'processes') refuse(script, '--instances needs --processes');
const command = `pnpm exec tsx ${script} ${process.argv.slice(2).join(' ')}`.trim();

const config = parseConfig(z.object(commonConfig), process.env);
const run = randomUUID().slice(0, 8);
const prefix = `bench-${run}.`;
const tenantId = 'bench';
/** Strict repairs as the services' default (MAX_REPAIRS): the pipeline and the logic alone run alike. */
const maxRepairs = 1;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function main(): Promise<void> {
  const loadBefore = load();
  const stack = stackProcesses(config);
  const watched: Watched[] = [{ name: 'bench', pid: process.pid }, ...stack.watched];
  const workload = interleavedWorkload({ tenantId, sessions, turns: turnsPerSession, seed });
  const { interleaved } = workload;
  const total = interleaved.length;
  const topics = topicNames(prefix);
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: `bench-${run}`,
    topics,
    service: 'bench',
    logger: createLogger('bench', 'error'),
  });
  const details: string[][] = [];
  const latencies: { p50: number; p99: number }[] = [];
  try {
    // The passthrough and the shape send the very bytes the publisher sends (registry-framed Avro), with
    // the same keys.
    const messages = l0Records(interleaved, await bus.registry.idFor(topics.turns, 'TurnEvent'));
    const bytes = meanRecordBytes(messages).toFixed(0);
    process.stderr.write(
      `bench ${run}: ${sessions} sessions × ${turnsPerSession} turns = ${total} turns, ${bytes} B per record\n`,
    );
    const shapes = (['pipeline', 'lua'] as const).map((style) => shapeLegName(style, mode));
    const plans: Plan[] = [
      {
        name: 'bare kafkajs passthrough',
        kind: 'passthrough',
        run: (round) =>
          passthrough(bus.kafka, messages, {
            topic: `${prefix}passthrough-${round}`,
            partitions,
            watched,
            rate,
          }),
      },
      ...(['pipeline', 'lua'] as const).map((style): Plan => ({
        name: shapeLegName(style, mode),
        kind: 'shape',
        run: (round) =>
          shapeLeg({
            kafka: bus.kafka,
            brokers: config.KAFKA_BROKERS,
            redisUrl: config.REDIS_URL,
            messages,
            sessions,
            turns: turnsPerSession,
            partitions,
            style,
            mode,
            rate,
            topicPrefix: `${prefix}shape-${style}-${round}.`,
            redisPrefix: `bench-${run}:shape-${style}-${round}:`,
            watched,
          }),
      })),
      {
        name: `Tidemark, ${mode === 'one' ? 'one process' : instances === 1 ? 'one process per service' : `${instances} processes per service`}`,
        kind: 'tidemark',
        against: shapes,
        run: async (round) => {
          const leg = await tidemarkLeg({
            config,
            turns: interleaved,
            workload: { tenantId, sessions, turns: turnsPerSession, seed, maxRepairs },
            partitions,
            instances,
            rate,
            mode,
            timeline: flags.timeline,
            profileDir,
            topicPrefix: `${prefix}tidemark-${round}.`,
            redisPrefix: `bench-${run}:tidemark-${round}:`,
            watched,
          });
          details[round] = leg.lines;
          latencies[round] = leg.latency;
          return leg;
        },
      },
    ];
    const legs = await runRounds(plans, rounds);
    process.stderr.write('the same logic in memory (core reference)…\n');
    const logic = logicCost(workload.sessions, maxRepairs);
    const figures = headline(legs);
    const floors = shapes.map((name) => {
      const shape = figures[`shape.${name}.cpuMicrosPerTurn`] ?? Number.NaN;
      return (shape + logic.cpuMicrosPerTurn) / shape;
    });
    recordFigures('pipeline', {
      mode,
      rate,
      partitions,
      instances,
      profiled: profileDir === null ? 0 : 1,
      turns: total,
      ...figures,
      'logic.cpuMicrosPerTurn': logic.cpuMicrosPerTurn,
      'logic.floorVsShape.pipeline': floors[0]!,
      'logic.floorVsShape.lua': floors[1]!,
      'validation.p50Ms': median(latencies.map((l) => l.p50)),
      'validation.p99Ms': median(latencies.map((l) => l.p99)),
      command,
    });
    process.stdout.write(
      [
        `Tidemark pipeline benchmark — ${sessions} sessions × ${turnsPerSession} turns = ${total} turns (${bytes} B per record), ${partitions} partitions${instances === 1 ? '' : `, ${instances} processes per service`}, offered ${rate === 0 ? 'as fast as possible' : `${rate} turns/s`}, medians of ${rounds} interleaved round${rounds === 1 ? '' : 's'}`,
        ...table(legs),
        ...stack.uncounted.map((note) => `  NOTE: ${note}; every CPU figure above leaves it out`),
        `  targets (design.md): Tidemark's CPU ÷ the same shape's ≤ 1.25×, its turns/s ÷ the same shape's ≥ 0.8 (same mode; the two shape figures are pipeline / Lua)`,
        `  the same logic in memory, no I/O (core's runReference over these sessions in this process, median of 3 passes; ${logic.compactions} compactions, ${logic.decisions} decisions): ${logic.cpuMicrosPerTurn.toFixed(1)} µs CPU per turn; the same shape plus it ÷ the same shape: ${floors.map((f) => `${f.toFixed(2)}×`).join(' / ')} (the floor for this logic on this I/O)`,
        ...details.flatMap((lines, round) => [
          `  Tidemark, round ${round + 1}:`,
          ...lines.map((line) => `    ${line}`),
        ]),
        `  load average (1/5/15 min, ${cpus().length} CPUs): ${loadBefore} before, ${load()} after`,
        ...(profileDir === null ? [] : profiles(profileDir)),
        `  command: ${command}`,
        '',
      ].join('\n'),
    );
  } finally {
    await bus.disconnect();
  }
}

/** Each service's top self-time functions, from the profiles it wrote as it stopped (the largest: a full round). */
function profiles(dir: string): string[] {
  return ['materializer', 'compactor', 'validator', 'resume'].flatMap((name) => {
    const file = mainProfileIn(path.join(dir, name));
    if (file === null) return [`  ${name}: no profile written`];
    const title = `${name} (${path.relative(process.cwd(), file)})`;
    return describeSelfTime(title, selfTime(readProfile(file))).map((line) => `  ${line}`);
  });
}

await main();
