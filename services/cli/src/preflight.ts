import { TidemarkError } from '@tidemark/core';
import { connect } from 'node:net';
import { commonConfig, parseConfig, z } from '@tidemark/service';
import type { Env } from './pipeline.js';

// Before a command connects to the stack, check that each part of it answers at all, by a deadline: a
// TCP connection to a Kafka seed broker and to Redis, an HTTP answer from the schema registry. kafkajs
// retries a broker that is down for half a minute, and ioredis a Redis for as long as it is asked to; a
// person at a terminal wants one line, now, saying what is down, where it was looked for, and which
// variable says where. A part that answers here and fails later fails the command as it always did.

/** How long each part may take to answer; they are checked at once, so this bounds the whole check. */
const PREFLIGHT_TIMEOUT_MS = 3_000;

/** A part of the stack that did not answer. */
export interface Unreachable {
  readonly part: 'Kafka' | 'the schema registry' | 'Redis';
  /** Where it was looked for, without credentials. */
  readonly address: string;
  /** The variable that says where. */
  readonly variable: 'KAFKA_BROKERS' | 'SCHEMA_REGISTRY_URL' | 'REDIS_URL' | 'REDIS_CLUSTER_NODES';
  readonly reason: string;
}

const stackConfig = z.object({
  KAFKA_BROKERS: commonConfig.KAFKA_BROKERS,
  SCHEMA_REGISTRY_URL: commonConfig.SCHEMA_REGISTRY_URL,
  REDIS_URL: commonConfig.REDIS_URL,
  REDIS_CLUSTER_NODES: commonConfig.REDIS_CLUSTER_NODES,
});

export type StackAddresses = Omit<z.infer<typeof stackConfig>, 'REDIS_CLUSTER_NODES'> & {
  readonly REDIS_CLUSTER_NODES?: readonly string[];
};

/** Thrown by `preflight`; its message is the one line the CLI prints. */
export class StackUnreachableError extends TidemarkError<'stack_unreachable'> {
  override readonly name: string = 'StackUnreachableError';
  constructor(readonly unreachable: readonly Unreachable[]) {
    super('stack_unreachable', describeUnreachable(unreachable), { retriable: true });
  }
}

/** Checks the stack the environment names (a bad value throws its ConfigError), or throws one line. */
export async function preflight(env: Env, timeoutMs = PREFLIGHT_TIMEOUT_MS): Promise<void> {
  const unreachable = await unreachableParts(parseConfig(stackConfig, env), timeoutMs);
  if (unreachable.length > 0) throw new StackUnreachableError(unreachable);
}

/** The parts of the stack that did not answer within `timeoutMs`; empty when all of them did. */
export async function unreachableParts(
  stack: StackAddresses,
  timeoutMs = PREFLIGHT_TIMEOUT_MS,
): Promise<Unreachable[]> {
  const clusterNodes = stack.REDIS_CLUSTER_NODES ?? [];
  const [kafka, registry, redis] = await Promise.all([
    anyNodeReason(stack.KAFKA_BROKERS, timeoutMs),
    httpReason(stack.SCHEMA_REGISTRY_URL, timeoutMs),
    clusterNodes.length > 0
      ? anyNodeReason(clusterNodes, timeoutMs)
      : redisReason(stack.REDIS_URL, timeoutMs),
  ]);
  const unreachable: Unreachable[] = [];
  if (kafka !== null) {
    const address = stack.KAFKA_BROKERS.join(',');
    unreachable.push({ part: 'Kafka', address, variable: 'KAFKA_BROKERS', reason: kafka });
  }
  if (registry !== null) {
    const address = withoutCredentials(stack.SCHEMA_REGISTRY_URL);
    unreachable.push({
      part: 'the schema registry',
      address,
      variable: 'SCHEMA_REGISTRY_URL',
      reason: registry,
    });
  }
  if (redis !== null && clusterNodes.length > 0) {
    const address = clusterNodes.join(',');
    unreachable.push({ part: 'Redis', address, variable: 'REDIS_CLUSTER_NODES', reason: redis });
  } else if (redis !== null) {
    const address = withoutCredentials(stack.REDIS_URL);
    unreachable.push({ part: 'Redis', address, variable: 'REDIS_URL', reason: redis });
  }
  return unreachable;
}

/**
 * One line: `cannot reach Kafka at 127.0.0.1:19092 (KAFKA_BROKERS): connection refused; Redis at … .
 * Is the stack up? …`.
 */
export function describeUnreachable(unreachable: readonly Unreachable[]): string {
  const parts = unreachable.map((u) => `${u.part} at ${u.address} (${u.variable}): ${u.reason}`);
  return `cannot reach ${parts.join('; ')}. Is the stack up? Start the local one with: pnpm infra:up`;
}

/**
 * Kafka (or a Redis Cluster) answers when any seed node does: the client needs one to find the rest.
 */
async function anyNodeReason(nodes: readonly string[], timeoutMs: number): Promise<string | null> {
  const reasons = await Promise.all(
    nodes.map((node) => {
      const target = hostAndPort(`tcp://${node}`, null);
      return target === null ? Promise.resolve(null) : tcpReason(target.host, target.port, timeoutMs);
    }),
  );
  if (reasons.some((reason) => reason === null)) return null;
  return [...new Set(reasons)].join(', ');
}

async function redisReason(url: string, timeoutMs: number): Promise<string | null> {
  if (!/^rediss?:/.test(url)) return null; // a form this check does not know: let ioredis judge it
  const target = hostAndPort(url, 6379);
  return target === null ? null : tcpReason(target.host, target.port, timeoutMs);
}

/** Any HTTP answer will do (a 401 too, so no credentials are sent): reachable is all this checks. */
async function httpReason(url: string, timeoutMs: number): Promise<string | null> {
  try {
    const base = withoutCredentials(url);
    const subjects = new URL('subjects', base.endsWith('/') ? base : `${base}/`);
    const response = await fetch(subjects, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return null;
  } catch (error) {
    return reasonOf(error, timeoutMs);
  }
}

function tcpReason(host: string, port: number, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (reason: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(reason);
    };
    const timer = setTimeout(() => done(noAnswer(timeoutMs)), timeoutMs);
    socket.once('connect', () => done(null));
    socket.once('error', (error) => done(reasonOf(error, timeoutMs)));
  });
}

function hostAndPort(url: string, defaultPort: number | null): { host: string; port: number } | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const port = parsed.port === '' ? defaultPort : Number(parsed.port);
  if (port === null || parsed.hostname === '') return null;
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return url;
  parsed.username = '';
  parsed.password = '';
  return parsed.href;
}

const noAnswer = (timeoutMs: number) => `no answer within ${timeoutMs / 1000} s`;

const reasons: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
};

/** A short reason from a socket error, or a fetch error (whose `cause` holds the socket's). */
function reasonOf(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return noAnswer(timeoutMs);
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && reasons[code] !== undefined) return reasons[code];
  }
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  return cause instanceof Error ? cause.message : String(cause);
}
