import {
  defaultPolicy,
  definePolicy,
  parsePolicyOverrides,
  policiesFrom,
  type Policies,
  type Policy,
} from '@tidemark/core';
import {
  commonConfig,
  stateRetentionConfig,
  ConfigError,
  z,
  groupNamed,
  parsedVariable,
} from '@tidemark/service';
import { defaultSessionsPerStep } from './engine.js';

// The compactor's configuration: where the stack is (commonConfig), the compaction policy (each field
// of core's Policy, defaults from core's defaultPolicy), the generation it writes, and repair bounds.

const positive = z.coerce.number().int().positive();
/** An optional bound: unset (or "none") for no bound. */
const optionalBound = z
  .union([z.literal('none'), positive])
  .optional()
  .transform((value) => (value === undefined || value === 'none' ? null : value));

export const compactorConfigSchema = z
  .object({
    ...commonConfig,
    ...stateRetentionConfig,
    /** The consumer group of turns.l0. Default: `<TOPIC_PREFIX>tidemark-compactor` (groups are cluster-wide: see groupNamed). */
    GROUP_ID: z.string().min(1).optional(),
    /** The generation this compactor writes; a replay under a new policy writes a newer one. */
    GENERATION: positive.default(1),
    /** Recorded in every compaction. */
    COMPACTOR_VERSION: z.string().min(1).default('tidemark-compactor/1'),
    L1_EVERY_TURNS: positive.default(defaultPolicy.l1EveryTurns),
    L1_TOKEN_BUDGET: optionalBound,
    DIGEST_FAN_IN: z.coerce.number().int().min(2).default(defaultPolicy.digestFanIn),
    DIGEST_TOKEN_BUDGET: optionalBound,
    MAX_DEPTH: positive.default(defaultPolicy.maxDepth),
    NARRATIVE_TOKEN_BUDGET: positive.default(defaultPolicy.narrativeTokenBudget),
    /** strict (default), narrative, or model:<model> (with MODEL_BASE_URL). */
    SUMMARIZER: z.string().min(1).default(defaultPolicy.summarizer),
    MODEL_BASE_URL: z.url().optional(),
    MODEL_API_KEY: z.string().optional(),
    /** 0: no strict repairs; 1 or more: each lossy node is published with its strict repair (one is all there is). */
    MAX_REPAIRS: z.coerce.number().int().min(0).default(1),
    /** How long a compaction waits for the materializer to apply its span before the batch is retried. */
    STATE_WAIT_MS: positive.default(10_000),
    /**
     * How long the group waits for a member that went silent (SIGKILL) before its partitions move on: a
     * restarted compactor resumes after at most this (the broker's floor is 6 s).
     */
    /**
     * Sessions a batch advances at once: a batch of more is taken in steps of this many (bounds the
     * memory a batch of thousands of sessions holds; see CompactionEngine.onTurns).
     */
    BATCH_SESSIONS: positive.default(defaultSessionsPerStep),
    /** turns.l0 partitions compacted at once (they hold disjoint sessions). */
    COMPACTOR_PARTITIONS_CONCURRENTLY: z.coerce.number().int().positive().default(4),
    CONSUMER_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).default(30_000),
    /**
     * Policies of particular sessions or tenants, as JSON: {"tenant/session": {...}, "tenant": {...}}, each
     * a (partial) policy over the configured one. A session's own entry wins over its tenant's.
     */
    POLICY_OVERRIDES: parsedVariable(parsePolicyOverrides, {}),
    /** Partitions of topics this service creates if they are missing. */
    PARTITIONS: positive.default(4),
  })
  .transform((config) => ({
    ...config,
    GROUP_ID: config.GROUP_ID ?? groupNamed(config.TOPIC_PREFIX, 'tidemark-compactor'),
  }));

export type CompactorConfig = z.infer<typeof compactorConfigSchema>;

/** The policy the configuration names, checked by core. */
export function policyOf(config: CompactorConfig): Policy {
  return basePolicy(config);
}

/** The configured policy and the overrides, each checked by core (a bad one fails at start). */
export function policiesOf(config: CompactorConfig): Policies {
  try {
    return policiesFrom(basePolicy(config), config.POLICY_OVERRIDES);
  } catch (error) {
    throw new ConfigError(`POLICY_OVERRIDES: ${(error as Error).message}`, ['POLICY_OVERRIDES']);
  }
}

function basePolicy(config: CompactorConfig): Policy {
  return definePolicy({
    l1EveryTurns: config.L1_EVERY_TURNS,
    l1TokenBudget: config.L1_TOKEN_BUDGET,
    digestFanIn: config.DIGEST_FAN_IN,
    digestTokenBudget: config.DIGEST_TOKEN_BUDGET,
    maxDepth: config.MAX_DEPTH,
    narrativeTokenBudget: config.NARRATIVE_TOKEN_BUDGET,
    summarizer: config.SUMMARIZER,
  });
}
