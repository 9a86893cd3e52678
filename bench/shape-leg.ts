import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { Kafka } from 'kafkajs';
import { microsPerTurn, sampleCpu, type Watched } from './cpu.js';
import { sendInOrder } from './passthrough.js';
import type { LegResult } from './report.js';
import {
  roles,
  shapeCounts,
  shapeTopics,
  startRole,
  type RedisStyle,
  type ShapeDeployment,
} from './shape.js';
import type { Message } from './workload.js';

export type ProcessMode = 'one' | 'processes';

export interface ShapeLegOptions {
  /** The bench's client: it creates and removes the leg's topics and sends the L0 records. */
  readonly kafka: Kafka;
  readonly brokers: readonly string[];
  readonly redisUrl: string;
  readonly messages: readonly Message[];
  readonly sessions: number;
  readonly turns: number;
  readonly partitions: number;
  readonly style: RedisStyle;
  readonly mode: ProcessMode;
  /** Topic prefix and Redis key prefix of this leg alone (removed afterwards). */
  readonly topicPrefix: string;
  readonly redisPrefix: string;
  /** The bench process and the stack's processes; the spawned groups are added to them. */
  readonly watched: readonly Watched[];
}

interface Groups {
  readonly watched: readonly Watched[];
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * One leg of the same shape (bench/shape.ts): its topics, its four groups (here, or one process each),
 * joined before the first send; then the L0 records, sent as the passthrough sends them. Turns/s and CPU
 * run from the first send until the resume group has stored every node and decision.
 */
export async function shapeLeg(options: ShapeLegOptions): Promise<LegResult> {
  const topics = shapeTopics(options.topicPrefix);
  const deployment: ShapeDeployment = {
    brokers: options.brokers,
    redisUrl: options.redisUrl,
    topicPrefix: options.topicPrefix,
    redisPrefix: options.redisPrefix,
    style: options.style,
    expected: shapeCounts(options.sessions, options.turns),
  };
  const admin = options.kafka.admin();
  await admin.connect();
  const producer = options.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  let groups: Groups | null = null;
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: Object.values(topics).map((topic) => ({
        topic,
        numPartitions: options.partitions,
        replicationFactor: 1,
      })),
    });
    await producer.connect();
    groups = options.mode === 'one' ? await inProcess(deployment) : await spawned(deployment);
    const watched = [...options.watched, ...groups.watched];
    const before = sampleCpu(watched);
    const first = performance.now();
    await sendInOrder(producer, topics.turns, options.messages);
    await within(groups.done, 600_000, 'the shape leg did not finish within 10 minutes');
    const last = performance.now();
    const after = sampleCpu(watched);
    return {
      turnsPerSecond: (options.messages.length / (last - first)) * 1000,
      cpu: microsPerTurn(before, after, options.messages.length),
    };
  } finally {
    await groups?.stop();
    await producer.disconnect();
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
    await unlinkKeys(options.redisUrl, options.redisPrefix);
  }
}

async function inProcess(deployment: ShapeDeployment): Promise<Groups> {
  let finish = () => undefined as void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const running = await Promise.all(roles.map((role) => startRole(role, deployment, finish)));
  const crashed = Promise.race(running.map((r) => r.crashed));
  await Promise.race([Promise.all(running.map((r) => r.joined)), crashed]);
  return {
    watched: [],
    done: Promise.race([done, crashed]),
    stop: async () => void (await Promise.all(running.map((r) => r.stop()))),
  };
}

/** One process per role: `node --import tsx bench/shape-group.ts`, talking over IPC. */
async function spawned(deployment: ShapeDeployment): Promise<Groups> {
  const children = roles.map((role) => ({
    role,
    child: spawn(process.execPath, ['--import', 'tsx', 'bench/shape-group.ts'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, SHAPE_ROLE: role, SHAPE_DEPLOYMENT: JSON.stringify(deployment) },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    }),
  }));
  const stop = () => Promise.all(children.map(({ child }) => ended(child))).then(() => undefined);
  const said = (child: ChildProcess, type: string) =>
    new Promise<void>((resolve, reject) => {
      const onMessage = (message: { type?: string }) => {
        if (message.type !== type) return;
        child.off('exit', onExit);
        resolve();
      };
      const onExit = (code: number | null) =>
        reject(new Error(`a shape group exited (${code}) before ${type}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const resume = children.find(({ role }) => role === 'resume')!.child;
  const done = said(resume, 'done');
  done.catch(() => undefined);
  try {
    await within(
      Promise.all(children.map(({ child }) => said(child, 'joined'))),
      90_000,
      'shape groups not joined after 90 s',
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { watched: children.map(({ role, child }) => ({ name: role, pid: child.pid! })), done, stop };
}

function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** SIGTERM, and SIGKILL after 15 s; resolves once the child has exited. */
function ended(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function unlinkKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export const shapeLegName = (style: RedisStyle, mode: ProcessMode) =>
  `same shape, ${style === 'lua' ? 'one Lua call' : 'one pipeline'} per batch, ${mode === 'one' ? 'one process' : 'one process per group'}`;
