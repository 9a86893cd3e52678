import {
  defaultPolicy,
  definePolicy,
  parsePolicyOverrides,
  policiesFrom,
  type Policies,
} from '@tidemark/core';
import {
  commonConfig,
  stateRetentionConfig,
  ConfigError,
  z,
  groupNamed,
  parsedVariable,
} from '@tidemark/service';

const positive = z.coerce.number().int().positive();

/** The resume service's configuration: the common variables plus its own, parsed once at start. */
export const resumeConfigSchema = z
  .object({
    ...commonConfig,
    ...stateRetentionConfig,
    /** Create the topics if missing (local runs and tests); idempotent. */
    PROVISION_TOPICS: z.stringbool().default(true),
    /** Partitions of the topics when it provisions them. */
    TOPIC_PARTITIONS: z.coerce.number().int().positive().default(4),
    /** The consumer group of the markers consumer; the compactions consumer uses `<group>-nodes`. Default: `<TOPIC_PREFIX>tidemark-resume` (groups are cluster-wide: see groupNamed). */
    RESUME_GROUP_ID: z.string().min(1).optional(),
    /** `tenant:sha256hex,tenant:sha256hex` (hash a token with `pnpm --filter @tidemark/resume hash-token`). */
    RESUME_TOKENS: z.string().optional(),
    /** A JSON file `[{ "tenantId": "...", "tokenSha256": "<hex>" }]`; read with RESUME_TOKENS when both are set. */
    RESUME_TOKENS_FILE: z.string().optional(),
    /** Operators' tokens, `tenant:sha256hex,…`: each may revoke its tenant's markers (not read sessions). */
    OPERATOR_TOKENS: z.string().optional(),
    /** A JSON file of operators' tokens, as RESUME_TOKENS_FILE; read with OPERATOR_TOKENS when both are set. */
    OPERATOR_TOKENS_FILE: z.string().optional(),
    /** How long a revoke request waits for the validator's decision before it answers 202 (pending). */
    REVOKE_WAIT_MS: z.coerce.number().int().min(0).default(10_000),
    /** Run the worker (consume markers and compactions); false for an API-only instance. */
    RESUME_WORKER: z.stringbool().default(true),
    /** Compare every served context with the first one served for the same node and raw span. */
    RESUME_DIVERGENCE_CHECKS: z.stringbool().default(true),
    /** How long the worker's groups wait for a silent member (a killed worker) before moving its partitions. */
    CONSUMER_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).default(30_000),
    /** Sessions the worker keeps in memory between batches. */
    RESUME_CACHE_SESSIONS: z.coerce.number().int().positive().default(10_000),
    /** Bytes of built contexts kept in memory for repeated resumes of the same node and span (0: none). */
    RESUME_CONTEXT_CACHE_BYTES: z.coerce
      .number()
      .int()
      .min(0)
      .default(32 * 1024 * 1024),
    /** How often a worker checks that the resume store still exists (it rebuilds it from the topics if not). */
    RESUME_EPOCH_CHECK_MS: z.coerce.number().int().positive().default(1_000),
    /** Bytes per turns.l0 fetch when reading a raw span, at most (a fetch asks for about the span it needs). */
    RESUME_FETCH_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /**
     * How long a due compaction may stay undecided before the session is reported stale: its L0 turn at
     * the due L1 boundary was appended longer ago than this and no decision names that span yet.
     */
    STALE_AFTER_MS: positive.default(30_000),
    /** The compactor's L1 cadence (the same variable the compactor reads): an L1 is due every this many turns. */
    L1_EVERY_TURNS: positive.default(defaultPolicy.l1EveryTurns),
    /**
     * The compactor's per-session or per-tenant policies (the same variable, parsed the same way, core
     * parsePolicyOverrides): {"tenant/session": {...}, "tenant": {...}}.
     */
    POLICY_OVERRIDES: parsedVariable(parsePolicyOverrides, {}),
  })
  .transform((config) => ({
    ...config,
    RESUME_GROUP_ID: config.RESUME_GROUP_ID ?? groupNamed(config.TOPIC_PREFIX, 'tidemark-resume'),
  }));

export type ResumeConfig = z.infer<typeof resumeConfigSchema>;

/**
 * The compaction policy of each session as the compactor applies it (L1_EVERY_TURNS, POLICY_OVERRIDES),
 * each override checked by core: a bad one fails at start, naming the variable. The resume service
 * reads only the L1 cadence, to tell when an L1 is due.
 */
export function policiesOf(config: Pick<ResumeConfig, 'L1_EVERY_TURNS' | 'POLICY_OVERRIDES'>): Policies {
  const base = definePolicy({ l1EveryTurns: config.L1_EVERY_TURNS });
  try {
    return policiesFrom(base, config.POLICY_OVERRIDES);
  } catch (error) {
    throw new ConfigError(`POLICY_OVERRIDES: ${(error as Error).message}`, ['POLICY_OVERRIDES']);
  }
}
