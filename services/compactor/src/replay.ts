import { randomUUID } from 'node:crypto';
import { Bus, topicNames } from '@tidemark/contract';
import type { Policy } from '@tidemark/core';
import { createLogger, logRedisOutages, Registry, type Logger } from '@tidemark/service';
import { connectRedis, Projection, WindowStore } from '@tidemark/state';
import { SingleBar } from 'cli-progress';
import { CompactionEngine, namespaceOf } from './engine.js';
import { summarizerFor } from './summarizers.js';
import { engineMetrics } from './metrics.js';
import type { SessionWindow } from './window.js';

// Replay: read turns.l0 from the start with a fresh consumer group, compact every session under a policy
// as one generation, publish the compactions, and stop at the end offsets captured at the start. The
// same engine as the service, so a replay under the service's own policy and generation publishes the
// same ids with the same bytes (nothing new), and one under a new policy builds a new generation whose
// frame the validator adopts (invalidating the markers below its depth).

/** Where a replay reads and writes, from a service's configuration (its common part). */
export function replayTarget(config: {
  readonly KAFKA_BROKERS: readonly string[];
  readonly SCHEMA_REGISTRY_URL: string;
  readonly REDIS_URL: string;
  readonly REDIS_CLUSTER_NODES?: readonly string[];
  readonly TOPIC_PREFIX: string;
  readonly REDIS_PREFIX: string;
}): Pick<
  ReplayOptions,
  'brokers' | 'registryUrl' | 'redisUrl' | 'redisClusterNodes' | 'topicPrefix' | 'redisPrefix'
> {
  return {
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    redisUrl: config.REDIS_URL,
    redisClusterNodes: config.REDIS_CLUSTER_NODES ?? [],
    topicPrefix: config.TOPIC_PREFIX,
    redisPrefix: config.REDIS_PREFIX,
  };
}

export interface ReplayOptions {
  readonly brokers: readonly string[];
  readonly registryUrl: string;
  readonly redisUrl: string;
  /** A Redis Cluster's nodes instead of redisUrl (REDIS_CLUSTER_NODES). */
  readonly redisClusterNodes?: readonly string[];
  readonly topicPrefix?: string;
  /** The Redis prefix of the projection (the materializer's) and of the compactor's windows. */
  readonly redisPrefix?: string;
  readonly policy: Policy;
  readonly generation: number;
  readonly compactorVersion?: string;
  /** As the service's MAX_REPAIRS: each lossy node published with its strict repair (default 1), or none (0). */
  readonly maxRepairs?: number;
  /** Only this tenant's sessions (default all). */
  readonly tenant?: string;
  /** Only this session (of the tenant, when one is given) (default all). */
  readonly session?: string;
  /**
   * The window namespace (default: the generation's and policy's, shared with a compactor service run
   * under them, so that one takes over where the replay stopped).
   */
  readonly namespace?: string;
  readonly stateWaitMs?: number;
  readonly modelBaseUrl?: string;
  readonly modelApiKey?: string;
  /** bar: a cli-progress bar; lines: a plain line every interval; none. Default: bar on a TTY. */
  readonly progress?: 'bar' | 'lines' | 'none';
  readonly output?: NodeJS.WritableStream & { isTTY?: boolean };
  readonly intervalMs?: number;
  readonly logger?: Logger;
  /** turns.l0 partitions replayed at once (default 4). */
  readonly partitionsConcurrently?: number;
}

export interface ReplayResult {
  readonly groupId: string;
  readonly namespace: string;
  /** Turns read (decoded) up to the end offsets. */
  readonly turns: number;
  readonly compactions: number;
  readonly seconds: number;
}

export async function replay(options: ReplayOptions): Promise<ReplayResult> {
  const logger = options.logger ?? createLogger('replay', 'warn');
  const topics = topicNames(options.topicPrefix ?? '');
  const redisPrefix = options.redisPrefix ?? 'tidemark:';
  const namespace = options.namespace ?? namespaceOf(options.generation, options.policy);
  const groupId = `tidemark-replay-g${options.generation}-${randomUUID().slice(0, 8)}`;
  const output = options.output ?? process.stderr;
  const began = performance.now();

  const bus = await Bus.connect({
    brokers: [...options.brokers],
    registryUrl: options.registryUrl,
    clientId: groupId,
    topics,
    service: 'replay',
    logger,
  });
  const redis = logRedisOutages(
    connectRedis(
      { REDIS_URL: options.redisUrl, REDIS_CLUSTER_NODES: options.redisClusterNodes },
      { maxRetriesPerRequest: null },
    ),
    logger,
    'replay',
  );
  let turns = 0;
  let compactions = 0;
  try {
    const admin = await bus.admin();
    // The end is fixed now: turns appended while the replay runs belong to the live compactor.
    const offsets = await admin.fetchTopicOffsets(topics.turns);
    const ends = new Map(offsets.map((p) => [p.partition, Number(p.high)]));
    const total = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);

    const store = new WindowStore<SessionWindow>(redis, { prefix: redisPrefix, namespace });
    if ((await store.lifecycle.epoch()) === null) await store.lifecycle.reset(randomUUID());
    const summarizer = summarizerFor(options.policy.summarizer, {
      baseUrl: options.modelBaseUrl,
      apiKey: options.modelApiKey,
    });
    const engine = new CompactionEngine({
      policyFor: () => options.policy,
      generation: options.generation,
      compactorVersion: options.compactorVersion ?? 'tidemark-compactor/1',
      summarizerFor: () => summarizer,
      maxRepairs: options.maxRepairs ?? 1,
      stateWaitMs: options.stateWaitMs ?? 10_000,
      store,
      projection: new Projection(redis, { prefix: redisPrefix }),
      producer: await bus.producer(),
      metrics: engineMetrics(new Registry()),
      logger,
      accepts: (ref) =>
        (options.tenant === undefined || ref.tenantId === options.tenant) &&
        (options.session === undefined || ref.sessionId === options.session),
    });

    const progress = reporter(options.progress ?? (output.isTTY === true ? 'bar' : 'lines'), output, total, {
      intervalMs: options.intervalMs ?? 2_000,
      began,
    });
    const reached = new Map<number, number>();
    const consumer = bus.consumer({
      groupId,
      role: 'turns',
      fromBeginning: true,
      // Partitions hold disjoint sessions, so their batches are independent: overlap their round trips.
      partitionsConsumedConcurrently: options.partitionsConcurrently ?? 4,
      onBatch: async (records, context) => {
        // Past the captured end: leave it to the live compactor (and do not count it).
        const end = ends.get(context.partition) ?? 0;
        const within = records.filter((r) => r.raw.offset < end);
        const outcome = await engine.onTurns(within);
        turns += within.length;
        compactions += outcome.compactions;
        const last = records.at(-1);
        if (last !== undefined) reached.set(context.partition, last.raw.offset + 1);
        progress.update(turns, compactions);
      },
    });
    await consumer.run();
    // Done when the group's committed offsets reach the captured ends on every partition (dead-lettered
    // records never reach onBatch, so commits, not records seen, say where the replay is).
    for (;;) {
      const committed = await admin.fetchOffsets({ groupId, topics: [topics.turns] });
      const at = new Map(committed[0]?.partitions.map((p) => [p.partition, Number(p.offset)]) ?? []);
      const done = offsets.every((p) => {
        const end = ends.get(p.partition)!;
        return (
          end <= Number(p.low) || (at.get(p.partition) ?? -1) >= end || (reached.get(p.partition) ?? 0) >= end
        );
      });
      if (done) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await consumer.stop();
    progress.stop(turns, compactions);
    await admin.deleteGroups([groupId]).catch(() => undefined);
  } finally {
    await bus.disconnect();
    redis.disconnect();
  }
  return { groupId, namespace, turns, compactions, seconds: (performance.now() - began) / 1000 };
}

interface Reporter {
  update(turns: number, compactions: number): void;
  stop(turns: number, compactions: number): void;
}

function reporter(
  kind: 'bar' | 'lines' | 'none',
  output: NodeJS.WritableStream,
  total: number,
  options: { intervalMs: number; began: number },
): Reporter {
  const rate = (turns: number) =>
    Math.round(turns / Math.max(0.001, (performance.now() - options.began) / 1000)).toString();
  switch (kind) {
    case 'bar': {
      const bar = new SingleBar({
        format:
          'replay {bar} {percentage}% | turns {value}/{total} | compactions {compactions} | {rate} turns/s',
        stream: output,
        hideCursor: true,
      });
      bar.start(total, 0, { compactions: 0, rate: '0' });
      return {
        update: (turns, compactions) => bar.update(turns, { compactions, rate: rate(turns) }),
        stop: (turns, compactions) => {
          bar.update(turns, { compactions, rate: rate(turns) });
          bar.stop();
        },
      };
    }
    case 'lines': {
      let latest = { turns: 0, compactions: 0 };
      const line = () =>
        output.write(
          `replay: turns ${latest.turns}/${total}, compactions ${latest.compactions}, ${rate(latest.turns)} turns/s\n`,
        );
      const timer = setInterval(line, options.intervalMs);
      timer.unref();
      return {
        update: (turns, compactions) => {
          latest = { turns, compactions };
        },
        stop: (turns, compactions) => {
          clearInterval(timer);
          latest = { turns, compactions };
          line();
        },
      };
    }
    case 'none':
      return { update: () => undefined, stop: () => undefined };
    default: {
      const never: never = kind;
      return never;
    }
  }
}
