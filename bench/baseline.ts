import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { Bus, topicNames } from '../libs/contract/src/index.js';
import { commonConfig, createLogger, parseConfig, z } from '../libs/service/src/index.js';
import { stackProcesses, type Watched } from './cpu.js';
import { integer, readFlags, refuse } from './options.js';
import { passthrough } from './passthrough.js';
import { runRounds, table, type Plan } from './report.js';
import type { ProcessMode } from './children.js';
import { shapeLeg, shapeLegName } from './shape-leg.js';
import type { RedisStyle } from './shape.js';
import { interleavedWorkload, l0Records, meanRecordBytes } from './workload.js';

// The same-shape baseline (issue 25): kafkajs + ioredis doing Tidemark's topology with no domain logic
// (bench/shape.ts), on the bench's own L0 records, with one Redis pipeline or one Lua call per batch, in
// one process or one process per group; beside the bare kafkajs passthrough of the same records. Prints
// turns/s and CPU µs per turn summed over every process (bench/cpu.ts), medians over interleaved rounds.
// bench/pipeline.ts runs the legs of its own mode beside Tidemark; this runs them alone.
//
//   pnpm bench:baseline [--sessions 200] [--turns 500] [--rounds 3] [--mode both] [--style both] …

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

const script = 'bench/baseline.ts';
const flags = readFlags(
  {
    script,
    invocation: 'pnpm bench:baseline',
    about: [
      'The same-shape baseline (kafkajs + ioredis doing Tidemark’s topology, no logic) beside a bare',
      'kafkajs passthrough: turns/s and CPU µs per turn over every process (node, Kafka, Redis), medians',
      'over interleaved rounds, on the stack the environment names (KAFKA_BROKERS, SCHEMA_REGISTRY_URL,',
      'REDIS_URL; the local one by default: pnpm infra:up). See bench/README.md.',
    ],
    options: {
      sessions: { type: 'string', default: '200' },
      turns: { type: 'string', default: '500' },
      rounds: { type: 'string', default: '3' },
      mode: { type: 'string', default: 'both' },
      style: { type: 'string', default: 'both' },
      partitions: { type: 'string', default: '4' },
      seed: { type: 'string', default: '1' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    described: {
      sessions: 'sessions in the workload, of one tenant',
      turns: 'turns per session',
      rounds: 'interleaved rounds; the figures are their medians',
      mode: 'one (all groups in one process), processes (one per group) or both',
      style: 'pipeline (one ioredis pipeline per batch), lua (one EVALSHA per batch) or both',
      partitions: 'partitions of every topic',
      seed: 'the workload seed and its interleaving',
      help: 'print these options and exit',
    },
  },
  process.argv.slice(2),
);
const choice = <T extends string>(name: string, raw: string, values: readonly T[]): T[] => {
  if (raw === 'both') return [...values];
  if (!values.includes(raw as T)) refuse(script, `--${name} must be ${values.join(', ')} or both`);
  return [raw as T];
};
const sessions = integer(script, 'sessions', flags.sessions);
const turns = integer(script, 'turns', flags.turns);
const rounds = integer(script, 'rounds', flags.rounds);
const modes = choice<ProcessMode>('mode', flags.mode, ['one', 'processes']);
const styles = choice<RedisStyle>('style', flags.style, ['pipeline', 'lua']);
const partitions = integer(script, 'partitions', flags.partitions);
const seed = integer(script, 'seed', flags.seed);
const command = `pnpm exec tsx ${script} ${process.argv.slice(2).join(' ')}`.trim();

const config = parseConfig(z.object(commonConfig), process.env);
const run = randomUUID().slice(0, 8);
const prefix = `bench-${run}.`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function main(): Promise<void> {
  const loadBefore = load();
  const stack = stackProcesses(config);
  const watched: Watched[] = [{ name: 'bench', pid: process.pid }, ...stack.watched];
  const { interleaved } = interleavedWorkload({ tenantId: 'bench', sessions, turns, seed });
  const topics = topicNames(prefix);
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: `bench-${run}`,
    topics,
    service: 'bench',
    logger: createLogger('bench', 'error'),
  });
  try {
    const messages = l0Records(interleaved, await bus.registry.idFor(topics.turns, 'TurnEvent'));
    const bytes = meanRecordBytes(messages).toFixed(0);
    process.stderr.write(
      `bench ${run}: ${sessions} sessions × ${turns} turns = ${messages.length} turns, ${bytes} B per record\n`,
    );
    const plans: Plan[] = [
      {
        name: 'bare kafkajs passthrough',
        kind: 'passthrough',
        run: (round) =>
          passthrough(bus.kafka, messages, { topic: `${prefix}passthrough-${round}`, partitions, watched }),
      },
      ...modes.flatMap((mode) =>
        styles.map((style): Plan => ({
          name: shapeLegName(style, mode),
          kind: 'shape',
          run: (round) =>
            shapeLeg({
              kafka: bus.kafka,
              brokers: config.KAFKA_BROKERS,
              redisUrl: config.REDIS_URL,
              messages,
              sessions,
              turns,
              partitions,
              style,
              mode,
              topicPrefix: `${prefix}shape-${style}-${mode}-${round}.`,
              redisPrefix: `bench-${run}:shape-${style}-${mode}-${round}:`,
              watched,
            }),
        })),
      ),
    ];
    const legs = await runRounds(plans, rounds);
    process.stdout.write(
      [
        `Same-shape baseline — ${sessions} sessions × ${turns} turns = ${messages.length} turns (${bytes} B per record), ${partitions} partitions, medians of ${rounds} interleaved round${rounds === 1 ? '' : 's'}`,
        ...table(legs),
        ...stack.uncounted.map((note) => `  NOTE: ${note}; every CPU figure above leaves it out`),
        `  load average (1/5/15 min, ${cpus().length} CPUs): ${loadBefore} before, ${load()} after`,
        `  command: ${command}`,
        '',
      ].join('\n'),
    );
  } finally {
    await bus.disconnect();
  }
}

await main();
