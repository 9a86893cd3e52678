import { commonConfig, z, groupNamed } from '@tidemark/service';
import { defaultMaxParkedTurns } from '@tidemark/state';

/** The materializer's configuration: the common variables plus its own, with defaults that run locally. */
export const materializerConfigSchema = z
  .object({
    ...commonConfig,
    /** Its own consumer group on turns.l0. Default: `<TOPIC_PREFIX>tidemark-materializer` (groups are cluster-wide: see groupNamed). */
    MATERIALIZER_GROUP_ID: z.string().min(1).optional(),
    /**
     * A rebuild is caught up once it reached the end offsets taken at its start, or once no batch came for
     * this long after joining (the end may be a transaction marker no record reaches).
     */
    REBUILD_IDLE_MS: z.coerce.number().int().positive().default(2_000),
    /**
     * Partitions of turns.l0 applied at once. Safe (a session never spans partitions) and faster: one
     * partition's decoding and planning overlaps another's Redis round trip (bench/service.ts: about 1.7x
     * with 4 over 1 on 4 partitions).
     */
    PARTITIONS_CONSUMED_CONCURRENTLY: z.coerce.number().int().positive().default(4),
    /**
     * How long the group waits for a member that went silent (SIGKILL) before its partitions move on: a
     * restarted materializer resumes after at most this (the broker's floor is 6 s).
     */
    CONSUMER_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).default(30_000),
    /**
     * Early turns (past a missing one) a session holds until the missing one comes, then publishes again
     * after it; one more is refused (seq_gap, a dead letter) and breaks the session at its seq.
     */
    MAX_PARKED_TURNS: z.coerce.number().int().min(0).default(defaultMaxParkedTurns),
    /** Create the topics if missing (local runs and tests). */
    PROVISION_TOPICS: z.stringbool().default(true),
    /** Partitions of the topics when it provisions them. */
    TOPIC_PARTITIONS: z.coerce.number().int().positive().default(4),
  })
  .transform((config) => ({
    ...config,
    MATERIALIZER_GROUP_ID:
      config.MATERIALIZER_GROUP_ID ?? groupNamed(config.TOPIC_PREFIX, 'tidemark-materializer'),
  }));

export type MaterializerConfig = z.infer<typeof materializerConfigSchema>;
