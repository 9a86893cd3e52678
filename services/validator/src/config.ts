import { commonConfig, stateRetentionConfig, z, groupNamed } from '@tidemark/service';

/** The validator's configuration: the common variables plus its own, with defaults that run locally. */
export const validatorConfigSchema = z
  .object({
    ...commonConfig,
    ...stateRetentionConfig,
    /** Its own consumer group on the compactions topic. Default: `<TOPIC_PREFIX>tidemark-validator` (groups are cluster-wide: see groupNamed). */
    VALIDATOR_GROUP_ID: z.string().min(1).optional(),
    /** How long a compaction waits for the materializer to cover its boundary before it is unverifiable. */
    WATERMARK_TIMEOUT_MS: z.coerce.number().int().min(0).default(5_000),
    /** The artifacts condition (an extension of the specification): on unless switched off. */
    CHECK_ARTIFACTS: z.stringbool().default(true),
    /** How long one validator may hold the frame-store rebuild before another may take over. */
    REBUILD_LOCK_MS: z.coerce.number().int().positive().default(120_000),
    /** Compaction partitions decided at once (sessions of different partitions are independent). */
    PARTITIONS_CONCURRENTLY: z.coerce.number().int().positive().default(4),
    /**
     * How long the group waits for a silent validator (SIGKILLed) before its partitions move on. Above
     * WATERMARK_TIMEOUT_MS: a batch heartbeats after its wait.
     */
    SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).default(15_000),
    /** Partitions of the topics when the validator provisions them (tests, local runs). */
    TOPIC_PARTITIONS: z.coerce.number().int().positive().default(4),
  })
  .transform((config) => ({
    ...config,
    VALIDATOR_GROUP_ID: config.VALIDATOR_GROUP_ID ?? groupNamed(config.TOPIC_PREFIX, 'tidemark-validator'),
  }));

export type ValidatorConfig = z.infer<typeof validatorConfigSchema>;
