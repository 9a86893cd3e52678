import { definePolicy, defaultPolicy } from '@tidemark/core';
import { commonConfig, createLogger, parseConfig, z } from '@tidemark/service';
import { Command, InvalidArgumentError, Option } from 'commander';
import { replay, replayTarget, type ReplayResult } from './replay.js';

// `tidemark replay`: the replay as a commander command, so the project's `tidemark` CLI mounts it as a
// subcommand and `src/replay-cli.ts` runs it alone. Where the stack is comes from the environment (the
// same variables as the services); what to replay and under which policy, from the flags.

const connection = z.object({
  KAFKA_BROKERS: commonConfig.KAFKA_BROKERS,
  SCHEMA_REGISTRY_URL: commonConfig.SCHEMA_REGISTRY_URL,
  REDIS_URL: commonConfig.REDIS_URL,
  REDIS_CLUSTER_NODES: commonConfig.REDIS_CLUSTER_NODES,
  TOPIC_PREFIX: commonConfig.TOPIC_PREFIX,
  REDIS_PREFIX: commonConfig.REDIS_PREFIX,
  LOG_LEVEL: commonConfig.LOG_LEVEL,
  MODEL_BASE_URL: z.url().optional(),
  MODEL_API_KEY: z.string().optional(),
});

const integer = (min: number) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < min) {
    throw new InvalidArgumentError(`must be an integer of at least ${min}`);
  }
  return parsed;
};
const bound = (value: string) => (value === 'none' ? null : integer(1)(value));

interface Flags {
  l1Every: number;
  l1Budget: number | null;
  digestFanIn: number;
  budget: number | null;
  maxDepth: number;
  narrativeBudget: number;
  summarizer: string;
  generation: number;
  compactorVersion: string;
  tenant?: string;
  session?: string;
  progress?: 'bar' | 'lines' | 'none';
}

export function replayCommand(
  env: Readonly<Record<string, string | undefined>> = process.env,
  onDone: (result: ReplayResult) => void = (result) =>
    process.stdout.write(
      `replayed ${result.turns} turns into ${result.compactions} compactions in ${result.seconds.toFixed(1)} s (generation namespace ${result.namespace})\n`,
    ),
): Command {
  return new Command('replay')
    .description(
      'Re-read turns.l0 from the start under a compaction policy, as a generation, publish the compactions, and exit at the end offsets captured at the start.',
    )
    .option(
      '--l1-every <turns>',
      'an L1 summary every this many turns',
      integer(1),
      defaultPolicy.l1EveryTurns,
    )
    .option('--l1-budget <tokens>', 'or sooner, at this many uncompacted tokens ("none")', bound, null)
    .option(
      '--digest-fan-in <nodes>',
      'a digest once this many nodes of a tier wait',
      integer(2),
      defaultPolicy.digestFanIn,
    )
    .option(
      '--budget <tokens>',
      'digest token budget: digest sooner once waiting nodes exceed it ("none")',
      bound,
      null,
    )
    .option('--max-depth <tier>', 'the deepest tier built', integer(1), defaultPolicy.maxDepth)
    .option(
      '--narrative-budget <tokens>',
      "each node's narrative budget",
      integer(1),
      defaultPolicy.narrativeTokenBudget,
    )
    .option('--summarizer <name>', 'strict, narrative or model:<model>', defaultPolicy.summarizer)
    .option('--generation <n>', 'the generation written (a new policy wants a new generation)', integer(1), 2)
    .option('--compactor-version <v>', 'recorded in every compaction', 'tidemark-compactor/1')
    .option('--tenant <id>', "only this tenant's sessions")
    .option('--session <id>', 'only this session')
    .addOption(
      new Option('--progress <kind>', 'progress display (default: bar on a TTY)').choices([
        'bar',
        'lines',
        'none',
      ]),
    )
    .action(async (flags: Flags) => {
      const config = parseConfig(connection, env);
      const policy = definePolicy({
        l1EveryTurns: flags.l1Every,
        l1TokenBudget: flags.l1Budget,
        digestFanIn: flags.digestFanIn,
        digestTokenBudget: flags.budget,
        maxDepth: flags.maxDepth,
        narrativeTokenBudget: flags.narrativeBudget,
        summarizer: flags.summarizer,
      });
      const result = await replay({
        ...replayTarget(config),
        policy,
        generation: flags.generation,
        compactorVersion: flags.compactorVersion,
        ...(flags.tenant === undefined ? {} : { tenant: flags.tenant }),
        ...(flags.session === undefined ? {} : { session: flags.session }),
        ...(flags.progress === undefined ? {} : { progress: flags.progress }),
        ...(config.MODEL_BASE_URL === undefined ? {} : { modelBaseUrl: config.MODEL_BASE_URL }),
        ...(config.MODEL_API_KEY === undefined ? {} : { modelApiKey: config.MODEL_API_KEY }),
        logger: createLogger('replay', config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL),
      });
      onDone(result);
    });
}
