import type { Policy } from '@tidemark/core';
import {
  type Bus,
  defaultMaxEventBytes,
  L0Reader,
  Registry as SchemaRegistryClient,
  SessionHistory,
  topicNames,
  turnDecoder,
} from '@tidemark/contract';
import { defaultStateRetentionMs } from '@tidemark/service';
import { PlanStore, Projection, WatchStore, type RedisClient } from '@tidemark/state';
import type { Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createResumeClientFrom, type ResumeClient } from './client.js';
import { createExpander, type Expander } from './expand.js';
import { ExpiredPlans } from './expired.js';
import { resumeMetrics } from './metrics.js';
import { createWatchRecorder } from './regression-watch.js';

// The in-process library: what an agent runtime that embeds Tidemark calls on restart, and exactly what
// the HTTP handler calls. It needs the Redis the resume worker writes plans to and the Kafka cluster
// holding turns.l0 (a Bus, or a kafkajs client plus the schema registry's URL).

export type ResumeClientOptions = {
  readonly redis: RedisClient;
  /** Key prefix of the resume store and the projection (REDIS_PREFIX; default `tidemark:`). */
  readonly redisPrefix?: string;
  readonly metrics?: Registry;
  readonly logger?: Logger;
  /** Compare each context with the first served for the same node and raw span (default true). */
  readonly divergenceChecks?: boolean;
  /** Bytes per turns.l0 fetch (default 4 MiB). */
  readonly fetchBytes?: number;
  /** Bytes of built contexts kept for repeated resumes (default 32 MiB; 0 keeps none). */
  readonly contextCacheBytes?: number;
  /**
   * Each session's compaction policy, as the compactor applies it (L1_EVERY_TURNS, POLICY_OVERRIDES;
   * config policiesOf): when an L1 is due, for the stale check. Default: core's defaultPolicy.
   */
  readonly policyFor?: (ref: { readonly tenantId: string; readonly sessionId: string }) => Policy;
  /** How long a due compaction may stay undecided before a session is reported stale (default 30 s). */
  readonly staleAfterMs?: number;
  /**
   * The deployment's STATE_RETENTION_MS (default a week): a session whose plan expired is rebuilt from
   * the topics when read, and stored again for this long.
   */
  readonly stateRetentionMs?: number;
} & (
  | { readonly bus: Bus }
  | {
      readonly kafka: Kafka;
      readonly registryUrl: string;
      /** TOPIC_PREFIX (default ''). */
      readonly topicPrefix?: string;
    }
);

export interface ResumeLibraryClient extends ResumeClient {
  /** Expand: a node of the session's summary (its claims, each with its seq), and the turns it covers. */
  readonly expand: Expander;
  /** Closes the turns.l0 reader's connections (the Redis and Kafka clients passed in stay open). */
  close(): Promise<void>;
}

export function createResumeClient(options: ResumeClientOptions): ResumeLibraryClient {
  const prefix = options.redisPrefix ?? 'tidemark:';
  const { kafka, registry, topics, maxEventBytes } =
    'bus' in options
      ? options.bus
      : {
          kafka: options.kafka,
          registry: new SchemaRegistryClient(options.registryUrl),
          topics: topicNames(options.topicPrefix ?? ''),
          maxEventBytes: defaultMaxEventBytes,
        };
  const history = new SessionHistory({ kafka, registry, topics, maxEventBytes });
  const plans = new PlanStore(options.redis, {
    prefix,
    retentionMs: options.stateRetentionMs ?? defaultStateRetentionMs,
  });
  const metrics = options.metrics === undefined ? undefined : resumeMetrics(options.metrics);
  const reader = new L0Reader({
    kafka,
    decode: turnDecoder(registry, maxEventBytes),
    ...(metrics === undefined ? {} : { onFetch: (records: number) => metrics.l0Records.inc(records) }),
    ...(options.fetchBytes === undefined ? {} : { fetchBytes: options.fetchBytes }),
  });
  const expired = new ExpiredPlans(plans, history);
  const log = new Projection(options.redis, { prefix });
  const expand = createExpander({
    node: (ref, id) => expired.node(ref, id),
    position: (ref, seq) => log.l0Position(ref.tenantId, ref.sessionId, seq),
    turns: reader,
    turnsTopic: topics.turns,
  });
  const client = createResumeClientFrom({
    plans: expired.reader(),
    log,
    turns: reader,
    turnsTopic: topics.turns,
    ...(metrics === undefined ? {} : { metrics }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.divergenceChecks === undefined ? {} : { divergenceChecks: options.divergenceChecks }),
    ...(options.contextCacheBytes === undefined ? {} : { contextCacheBytes: options.contextCacheBytes }),
    ...(options.policyFor === undefined ? {} : { policyFor: options.policyFor }),
    ...(options.staleAfterMs === undefined ? {} : { staleAfterMs: options.staleAfterMs }),
    watch: createWatchRecorder({
      projection: log,
      store: new WatchStore(options.redis, {
        prefix,
        retentionMs: options.stateRetentionMs ?? defaultStateRetentionMs,
      }),
    }),
  });
  return {
    resume: (tenantId, sessionId, resumeOptions) => client.resume(tenantId, sessionId, resumeOptions),
    status: (tenantId, sessionId) => client.status(tenantId, sessionId),
    expand,
    close: async () => {
      client.release();
      await Promise.all([reader.close(), history.close()]);
    },
  };
}
