import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  groupLag,
  sessionKey,
  topicNames,
  type Bus,
  type EventConsumer,
  type TopicRole,
} from '@tidemark/contract';
import {
  definePolicy,
  type Compaction,
  type MarkerDecision,
  type Policy,
  type TurnEvent,
} from '@tidemark/core';
import { decisionIdentity, dropDeployment, provision } from '@tidemark/cli';
import { createLogger } from '@tidemark/service';
import { endpoints, uniqueName } from '@tidemark/test-infra';
import { connectRedis, type RedisClient } from '@tidemark/state';

// The four services as separate processes (`node --import tsx services/<name>/src/main.ts`, as they run
// in production), each killable with SIGKILL and restartable on the same environment; and a tap of the
// raw records on the compactions and markers topics, to see duplicates the Journal folds away.

export const serviceNames = ['materializer', 'compactor', 'validator', 'resume'] as const;
export type ServiceName = (typeof serviceNames)[number];

const servicesDir = fileURLToPath(new URL('../../services/', import.meta.url));

/** The tail of a process's output kept for a failure message. */
const keptOutput = 8_000;

export interface ServiceProcess {
  readonly name: ServiceName;
  readonly child: ChildProcess;
  /** Resolves with how the process ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the HTTP url once the host listens (rejects if the process ends first). */
  readonly url: Promise<string>;
  /** The last few kilobytes of its stdout and stderr. */
  output(): string;
  /** Whether it answers /readyz with 200 right now (false while it has not even started listening). */
  isReady(): Promise<boolean>;
}

function spawnService(name: ServiceName, env: Readonly<Record<string, string>>): ServiceProcess {
  // Its own process group (detached), so a kill reaches the whole of it and only it.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: `${servicesDir}${name}`,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  let url: string | null = null;
  let onUrl: (url: string) => void = () => undefined;
  let onEnd: (error: Error) => void = () => undefined;
  const listening = new Promise<string>((resolve, reject) => {
    onUrl = resolve;
    onEnd = reject;
  });
  // A caller that never waits for the url must not see an unhandled rejection when the process is killed.
  listening.catch(() => undefined);
  const take = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-keptOutput);
    if (url === null) {
      const match = /"url":"(http:[^"]+)"/.exec(output);
      if (match !== null) {
        url = match[1]!;
        onUrl(url);
      }
    }
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      onEnd(new Error(`${name} exited (${code ?? signal}) before listening:\n${output}`));
      resolve({ code, signal });
    });
  });
  const isReady = async () =>
    url !== null &&
    (await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    ));
  return { name, child, exited, url: listening, output: () => output, isReady };
}

const running = (p: ServiceProcess): boolean => p.child.exitCode === null && p.child.signalCode === null;

export async function killHard(p: ServiceProcess): Promise<void> {
  if (running(p) && p.child.pid !== undefined) process.kill(-p.child.pid, 'SIGKILL');
  await p.exited;
}

/** Waits until the process answers /readyz with 200 (its consumers joined their groups). */
export async function ready(p: ServiceProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // A process that never gets as far as listening (starved, or stuck starting) must not hang the caller.
  let timer: NodeJS.Timeout | undefined;
  const url = await Promise.race([
    p.url,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${p.name} not listening after ${timeoutMs} ms:\n${p.output()}`)),
        timeoutMs,
      );
    }),
  ]).finally(() => clearTimeout(timer));
  while (running(p)) {
    const status = await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`${p.name} not ready after ${timeoutMs} ms:\n${p.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${p.name} ended while waiting for readiness:\n${p.output()}`);
}

/** A deployment of its own (topic and Redis prefixes, groups) for the four services as processes. */
export interface ProcessDeployment {
  readonly run: string;
  readonly topicPrefix: string;
  readonly redisPrefix: string;
  readonly env: Readonly<Record<string, string>>;
  readonly bus: Bus;
  readonly redis: RedisClient;
  /** The latest process launched of each service. */
  readonly live: Map<ServiceName, ServiceProcess>;
  /** The policy of the workload's session at this index. */
  readonly policyOf: (index: number) => Policy;
  /** How each process that ended other than by our SIGKILL (or the close) ended, with its output. */
  readonly unexpected: string[];
  /** Spawns the service (again, or another instance of it), on the deployment's environment. */
  readonly launch: (name: ServiceName) => ServiceProcess;
  /** Stops what still runs (SIGTERM, SIGKILL after 8 s), disconnects and drops the deployment. */
  close(): Promise<void>;
}

/**
 * Provisions a deployment for a workload: every session under `l1EveryTurns: 12, digestFanIn: 3`, the
 * sessions at the `lossy` indexes under the narrative summarizer (so invalid markers and strict repairs
 * happen), repairs on. Nothing is launched yet.
 */
export async function provisionProcessDeployment(options: {
  readonly name: string;
  readonly workload: readonly (readonly TurnEvent[])[];
  readonly lossy: ReadonlySet<number>;
  /** A broker or a Redis of the test's own (one it kills or flushes), instead of the shared stack's. */
  readonly kafkaBrokers?: readonly string[];
  readonly redisUrl?: string;
  /** A Redis Cluster's nodes (REDIS_CLUSTER_NODES) instead of any single Redis. */
  readonly redisClusterNodes?: readonly string[];
  /** Settings beyond the deployment's own, for every service. */
  readonly env?: Readonly<Record<string, string>>;
}): Promise<ProcessDeployment> {
  const shared = endpoints();
  const kafkaBrokers = options.kafkaBrokers ?? shared.kafkaBrokers;
  const redisUrl = options.redisUrl ?? shared.redisUrl;
  const { schemaRegistryUrl } = shared;
  const run = uniqueName(options.name);
  const topicPrefix = `${run}.`;
  const redisPrefix = `${run}:`;
  const basePolicy = definePolicy({ l1EveryTurns: 12, digestFanIn: 3 });
  const narrative = definePolicy({ ...basePolicy, summarizer: 'narrative' });
  const policyOf = (index: number): Policy => (options.lossy.has(index) ? narrative : basePolicy);
  const overrides = Object.fromEntries(
    options.workload
      .map((turns, index) => [turns, index] as const)
      .filter(([, index]) => options.lossy.has(index))
      .map(([turns]) => [sessionKey(turns[0]!.tenantId, turns[0]!.sessionId), narrative]),
  );
  const common = {
    KAFKA_BROKERS: kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: schemaRegistryUrl,
    REDIS_URL: redisUrl,
    ...(options.redisClusterNodes === undefined
      ? {}
      : { REDIS_CLUSTER_NODES: options.redisClusterNodes.join(',') }),
    TOPIC_PREFIX: topicPrefix,
    REDIS_PREFIX: redisPrefix,
  };
  const env: Record<string, string> = {
    ...common,
    // Groups of this run's own, named after the prefix as the CLI's groupsFor names them.
    MATERIALIZER_GROUP_ID: `${topicPrefix}tidemark-materializer`,
    GROUP_ID: `${topicPrefix}tidemark-compactor`,
    VALIDATOR_GROUP_ID: `${topicPrefix}tidemark-validator`,
    RESUME_GROUP_ID: `${topicPrefix}tidemark-resume`,
    HTTP_PORT: '0',
    // Info: the host's "listening" line carries the url a random port ends up on.
    LOG_LEVEL: 'info',
    // The broker's floor: a SIGKILLed member's partitions move on after 6 s (materializer, compactor,
    // validator; the resume worker has no such setting and waits for the client default).
    CONSUMER_SESSION_TIMEOUT_MS: '6000',
    SESSION_TIMEOUT_MS: '6000',
    SHUTDOWN_GRACE_MS: '5000',
    L1_EVERY_TURNS: String(basePolicy.l1EveryTurns),
    DIGEST_FAN_IN: String(basePolicy.digestFanIn),
    MAX_REPAIRS: '1',
    POLICY_OVERRIDES: JSON.stringify(overrides),
    ...options.env,
  };
  const bus = await provision(env, createLogger(options.name, 'error'));
  const redis = connectRedis({ REDIS_URL: redisUrl, REDIS_CLUSTER_NODES: options.redisClusterNodes });
  const live = new Map<ServiceName, ServiceProcess>();
  const spawned: ServiceProcess[] = [];
  const unexpected: string[] = [];
  let closing = false;
  return {
    run,
    topicPrefix,
    redisPrefix,
    env,
    bus,
    redis,
    live,
    policyOf,
    unexpected,
    launch: (name) => {
      const p = spawnService(name, env);
      void p.exited.then(({ code, signal }) => {
        if (signal !== 'SIGKILL' && !closing)
          unexpected.push(`${name} exited ${code ?? signal}:\n${p.output()}`);
      });
      live.set(name, p);
      spawned.push(p);
      return p;
    },
    async close() {
      closing = true;
      await Promise.all(
        spawned.map(async (p) => {
          if (running(p)) p.child.kill('SIGTERM');
          const timer = setTimeout(() => void killHard(p), 8_000);
          await p.exited;
          clearTimeout(timer);
        }),
      );
      await bus.disconnect();
      await dropDeployment(common);
      redis.disconnect();
    },
  };
}

/** The consumer groups each service commits in, and the topic role each reads. */
function groupsOf(env: Readonly<Record<string, string>>): Record<ServiceName, [string, TopicRole][]> {
  return {
    materializer: [[env.MATERIALIZER_GROUP_ID!, 'turns']],
    compactor: [[env.GROUP_ID!, 'turns']],
    validator: [[env.VALIDATOR_GROUP_ID!, 'compactions']],
    resume: [
      [env.RESUME_GROUP_ID!, 'markers'],
      [`${env.RESUME_GROUP_ID!}-nodes`, 'compactions'],
    ],
  };
}

/**
 * Records on a service's topics its groups have not committed: work it holds in flight or has yet to
 * fetch, which a SIGKILL now makes it (or its successor) do again. Null when the broker did not answer.
 */
export async function uncommitted(deployment: ProcessDeployment, name: ServiceName): Promise<number | null> {
  if (!admins.has(deployment)) admins.set(deployment, connectAdmin(deployment));
  try {
    const admin = await admins.get(deployment)!;
    const topics = topicNames(deployment.topicPrefix);
    let total = 0;
    for (const [groupId, role] of groupsOf(deployment.env)[name]) {
      total += await groupLag(admin, groupId, topics[role]);
    }
    return total;
  } catch {
    // The broker away (or back on a new connection): a fresh admin next time.
    const admin = admins.get(deployment);
    admins.delete(deployment);
    void admin?.then((a) => a.disconnect()).catch(() => undefined);
    return null;
  }
}

/** kafkajs's admin client, as the Bus hands it out. */
type Admin = Awaited<ReturnType<Bus['admin']>>;

/** An admin client per deployment for `uncommitted`, replaced after a failure; closed with the bus. */
const admins = new WeakMap<ProcessDeployment, Promise<Admin>>();
function connectAdmin(deployment: ProcessDeployment): Promise<Admin> {
  const admin = deployment.bus.kafka.admin();
  const connected = admin.connect().then(() => admin);
  connected.catch(() => admins.delete(deployment));
  return connected;
}

/** Disconnects the deployment's `uncommitted` admin, if it has one. */
export async function closeAdmin(deployment: ProcessDeployment): Promise<void> {
  const admin = admins.get(deployment);
  admins.delete(deployment);
  await admin?.then((a) => a.disconnect()).catch(() => undefined);
}

/**
 * Every record on the compactions and markers topics, raw bytes included, by identity: a compaction by
 * its id, a decision by (markerId, type, cause). A duplicate is harmless only if its bytes are the same.
 * And where each turn landed in turns.l0, for a reference whose L0 positions are the real ones.
 */
export class RawTap {
  /** identity → the distinct encodings (hex of the record value) seen for it. */
  readonly encodings = new Map<string, Set<string>>();
  /** identity → how many records carried it. */
  readonly copies = new Map<string, number>();
  /** `tenant/session` → seq → its turns.l0 position (the first copy's). */
  readonly positions = new Map<string, Map<number, { partition: number; offset: number }>>();
  readonly #consumers: EventConsumer[];

  private constructor(bus: Bus) {
    const group = uniqueName('chaos-tap');
    const add = (identity: string, value: Buffer | null) => {
      const held = this.encodings.get(identity) ?? new Set<string>();
      held.add(value === null ? '' : value.toString('hex'));
      this.encodings.set(identity, held);
      this.copies.set(identity, (this.copies.get(identity) ?? 0) + 1);
    };
    this.#consumers = [
      bus.consumer({
        groupId: `${group}-turns`,
        role: 'turns',
        fromBeginning: true,
        onBatch: (records) => {
          for (const { raw, value } of records) {
            const key = sessionKey(value.tenantId, value.sessionId);
            const seqs = this.positions.get(key) ?? new Map<number, { partition: number; offset: number }>();
            this.positions.set(key, seqs);
            if (!seqs.has(value.seq)) seqs.set(value.seq, { partition: raw.partition, offset: raw.offset });
          }
          return Promise.resolve();
        },
      }),
      bus.consumer({
        groupId: `${group}-compactions`,
        role: 'compactions',
        fromBeginning: true,
        onBatch: (records) => {
          for (const { raw, value } of records) add(compactionIdentity(value), raw.value);
          return Promise.resolve();
        },
      }),
      bus.consumer({
        groupId: `${group}-markers`,
        role: 'markers',
        fromBeginning: true,
        onBatch: (records) => {
          for (const { raw, value } of records) add(markerIdentity(value), raw.value);
          return Promise.resolve();
        },
      }),
    ];
  }

  static async open(bus: Bus): Promise<RawTap> {
    const tap = new RawTap(bus);
    await Promise.all(tap.#consumers.map((c) => c.run()));
    return tap;
  }

  /** Resolves once both tails joined and read to the end of their topics, or false after the timeout. */
  async caughtUp(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.#consumers.every((c) => c.ready())) {
        const lags = await Promise.all(this.#consumers.map((c) => c.lag()));
        if (lags.every((lag) => lag === 0)) return true;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return false;
  }

  /** Identities published with more than one encoding: a duplicate that is not a duplicate. */
  conflicting(): string[] {
    return [...this.encodings].filter(([, held]) => held.size > 1).map(([identity]) => identity);
  }

  /** Records beyond the first of each identity (redeliveries, republished work), by kind. */
  redundant(): { compactions: number; decisions: number } {
    const extra = (kind: string) =>
      [...this.copies]
        .filter(([identity]) => identity.startsWith(kind))
        .reduce((sum, [, n]) => sum + n - 1, 0);
    return { compactions: extra('c:'), decisions: extra('m:') };
  }

  async close(): Promise<void> {
    await Promise.all(this.#consumers.map((c) => c.stop()));
  }
}

const compactionIdentity = (c: Compaction): string => `c:${c.compactionId}`;
const markerIdentity = (d: MarkerDecision): string => `m:${decisionIdentity(d)}`;

/** A deterministic random order of the items (Fisher–Yates on the given generator). */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
