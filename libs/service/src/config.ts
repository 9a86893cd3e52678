import { TidemarkError } from '@tidemark/core';
import { z } from 'zod';

// Configuration is parsed once, at start, from the environment. Defaults run against the local stack
// (`pnpm infra:up`), so a service started with no environment at all works on a developer's machine.

/** Thrown when the environment holds a value a service cannot run with; it names every bad variable. */
export class ConfigError extends TidemarkError<'invalid_config'> {
  override readonly name: string = 'ConfigError';
  constructor(
    message: string,
    readonly variables: readonly string[],
  ) {
    super('invalid_config', message);
  }
}

const hostList = z.string().transform((value) =>
  value
    .split(',')
    .map((host) => host.trim())
    .filter((host) => host.length > 0),
);
const brokerList = hostList.refine((brokers) => brokers.length > 0, 'needs at least one host:port');

/** Variables every service reads: where the stack is, how it isolates names, where it listens, how it logs. */
export const commonConfig = {
  KAFKA_BROKERS: brokerList.default(['127.0.0.1:19092']),
  SCHEMA_REGISTRY_URL: z.url().default('http://127.0.0.1:18080/apis/ccompat/v7'),
  REDIS_URL: z.url().default('redis://127.0.0.1:16379'),
  /** A Redis Cluster's nodes (`host:port,…`, some suffice); when set, Redis is that Cluster and REDIS_URL unused. */
  REDIS_CLUSTER_NODES: hostList
    .refine((nodes) => nodes.every((node) => /^.+:\d{1,5}$/.test(node)), 'is a list of host:port')
    .default([]),
  /** Prepended to every topic name (tests and side-by-side deployments isolate by it). */
  TOPIC_PREFIX: z.string().default(''),
  /** Prepended to every Redis key. */
  REDIS_PREFIX: z.string().default('tidemark:'),
  HTTP_HOST: z.string().default('127.0.0.1'),
  /** 0 picks a free port (logged at start). */
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(0),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long a graceful shutdown may take before the process exits anyway. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(10_000),
  /**
   * How long a process keeps trying to start while the broker, the registry or Redis is away (backing
   * off, a fresh service each try) before it exits 1 for its supervisor.
   */
  START_WITHIN_MS: z.coerce.number().int().positive().default(300_000),
  /**
   * How long a readiness ping of Kafka or Redis may take: a dependency that has not answered by then
   * (a frozen broker or Redis answers nothing and closes nothing) makes /readyz answer 503, naming it.
   */
  DEPENDENCY_TIMEOUT_MS: z.coerce.number().int().positive().default(2_000),
  /**
   * A name for this process that stays the same across its restarts (a pod name, `materializer-1`), like
   * Kafka's group.instance.id: a restarted instance leaves its group as the member its killed
   * predecessor left behind, so its partitions move at once rather than after a session timeout. Unset:
   * every start is a new member. Two live processes must not share one.
   */
  INSTANCE_ID: z.string().min(1).optional(),
  /**
   * How far the JS heap may grow past what the last full collection kept, in percent (heap.ts): lower
   * bounds memory, higher collects less often. 0 leaves V8's own factor (which lets it grow severalfold).
   */
  HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(1_000).default(25),
  /**
   * How often a service that writes a rebuildable store (the materializer's projection, the compactor's
   * windows) checks that the store still has its epoch: a FLUSHALL does not disconnect, and an instance
   * with nothing to consume would not notice otherwise.
   */
  EPOCH_CHECK_MS: z.coerce.number().int().positive().default(1_000),
} as const;

/** STATE_RETENTION_MS's default: a week. */
export const defaultStateRetentionMs = 7 * 24 * 60 * 60 * 1000;

/**
 * The retention of a session's derived state in Redis (the compactor's window, the validator's frame, the
 * resume plan and nodes), for the services that keep one: every write sets it again, so it is how long a
 * session may stay idle before its state expires. An expired session is rebuilt from its topics (which
 * keep everything) the next time it is needed: Redis holds the sessions in use, not every session ever
 * seen. 0 keeps state forever. Default: 7 days.
 */
export const stateRetentionConfig = {
  STATE_RETENTION_MS: z.coerce.number().int().min(0).default(defaultStateRetentionMs),
} as const;

/**
 * Parses the environment with a service's schema, or throws a ConfigError naming every bad variable
 * and why, so a misconfigured service fails at start rather than at its first message.
 */
export function parseConfig<T extends z.ZodType>(
  schema: T,
  env: Readonly<Record<string, string | undefined>> = process.env,
): z.infer<T> {
  // Empty variables count as unset, as a shell user expects of `FOO= cmd`.
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  );
  const result = schema.safeParse(present);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const variable = issue.path.map(String).join('.') || '(environment)';
    return { variable, text: `${variable}: ${issue.message}` };
  });
  return failConfig(problems);
}

function failConfig(problems: readonly { variable: string; text: string }[]): never {
  throw new ConfigError(
    `invalid configuration: ${problems.map((p) => p.text).join('; ')}`,
    problems.map((p) => p.variable),
  );
}

/**
 * A consumer group's default name: the deployment's topic prefix, then the service's group. Kafka groups
 * are cluster-wide, and a group whose members subscribe to different topics (two deployments or test
 * runs on one broker) hands one member's partitions to another that never reads them.
 */
export function groupNamed(topicPrefix: string, group: string): string {
  return `${topicPrefix}${group}`;
}

/**
 * An optional variable whose text `parse` turns into a value (`absent` when unset); what parse throws
 * is reported as that variable's error, at start.
 */
export function parsedVariable<T>(parse: (raw: string) => T, absent: T) {
  return z
    .string()
    .optional()
    .transform((raw, context): T => {
      if (raw === undefined) return absent;
      try {
        return parse(raw);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    });
}
