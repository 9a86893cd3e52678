import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { unlinkMatching } from '../libs/state/src/index.js';
import { commandCounts, commandsPerTurn } from './redis-commands.js';
import type { Kafka } from 'kafkajs';
import { ended, said, type ProcessMode } from './children.js';
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
  /** Offered turns/s, paced; 0 (the default) as fast as possible. */
  readonly rate?: number;
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
    const commandsBefore = await commandCounts(options.redisUrl);
    const before = sampleCpu(watched);
    const first = performance.now();
    await sendInOrder(producer, topics.turns, options.messages, options.rate);
    await groups.done;
    const last = performance.now();
    const after = sampleCpu(watched);
    const commandsAfter = await commandCounts(options.redisUrl);
    // The shape did what it claims: exactly the expected records, no more (a redelivery would be more).
    const records = async (topic: string) =>
      (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
    const made = { compactions: await records(topics.compactions), decisions: await records(topics.markers) };
    if (
      made.compactions !== deployment.expected.compactions ||
      made.decisions !== deployment.expected.decisions
    ) {
      throw new Error(
        `the shape made ${made.compactions} compactions and ${made.decisions} decisions, not ${deployment.expected.compactions} and ${deployment.expected.decisions}`,
      );
    }
    return {
      turnsPerSecond: (options.messages.length / (last - first)) * 1000,
      cpu: microsPerTurn(before, after, options.messages.length),
      redisCommands: commandsPerTurn(commandsBefore, commandsAfter, options.messages.length).total,
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
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the shape leg did not finish within 10 minutes')), 600_000);
    timer.unref();
  });
  const finished = Promise.race([done, crashed, late]).finally(() => clearTimeout(timer));
  finished.catch(() => undefined); // awaited by the leg; handled here should the leg fail before it
  return {
    watched: [],
    done: finished,
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
  const resume = children.find(({ role }) => role === 'resume')!.child;
  const done = said<unknown>(resume, 'done', 600_000).then(() => undefined);
  done.catch(() => undefined);
  try {
    await Promise.all(children.map(({ child }) => said(child, 'joined', 90_000)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { watched: children.map(({ role, child }) => ({ name: role, pid: child.pid! })), done, stop };
}

async function unlinkKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    await unlinkMatching(redis, `${prefix}*`);
  } finally {
    redis.disconnect();
  }
}

export const shapeLegName = (style: RedisStyle, mode: ProcessMode) =>
  `same shape, ${style === 'lua' ? 'one Lua call' : 'one pipeline'} per batch, ${mode === 'one' ? 'one process' : 'one process per group'}`;
