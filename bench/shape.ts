import { Redis, type Result } from 'ioredis';
import { Kafka, logLevel, Partitioners, type Consumer, type EachBatchPayload, type Producer } from 'kafkajs';
import { maxRequestBytes, requestsOf } from '../libs/contract/src/index.js';

// The same shape: Tidemark's topology done by kafkajs + ioredis with no domain logic, so that the
// pipeline's cost can be read against the I/O the design needs rather than against a bare passthrough.
// Four groups, as the four services, with the services' partitions consumed concurrently
// (services/*/src/config.ts) and the contract consumer's settings (read_committed, 500 ms fetch wait);
// the producers are idempotent with acks -1, as the Bus's. Every batch makes ONE Redis call per
// consumer: one ioredis pipeline (style `pipeline`) or one EVALSHA of a script doing the same commands
// (style `lua`); nothing is awaited per message.
//
//   materializer  turns        → per turn HSET of the record into the session's projection hash,
//                                per session in the batch SET of its watermark
//   compactor     turns        → per turn RPUSH of a small window entry; per 40 turns of a session
//                                LTRIM of the window and a compaction-sized record (≈3.7 KB) to
//                                compactions, and per 4 of those one more (the L2 digest)
//   validator     compactions  → per compaction LRANGE of the session's window; one decision-sized
//                                record (≈390 B) to markers, five for a session's first digest (the
//                                digest's marker and the invalidation of the four L1 markers below it),
//                                which is the count the core reference decides on the bench workload
//   resume        compactions  → per compaction HSET of the node (a group of its own, as the worker's)
//                 markers      → per decision HSET into the session's decisions

export type Role = 'materializer' | 'compactor' | 'validator' | 'resume';
export const roles: readonly Role[] = ['materializer', 'compactor', 'validator', 'resume'];
export type RedisStyle = 'pipeline' | 'lua';

/** Where a shape leg runs; plain data, handed to a spawned group as JSON. */
export interface ShapeDeployment {
  readonly brokers: readonly string[];
  readonly redisUrl: string;
  readonly topicPrefix: string;
  readonly redisPrefix: string;
  readonly style: RedisStyle;
  /** The records the resume group sees when the leg is done. */
  readonly expected: { readonly compactions: number; readonly decisions: number };
}

export const shapeTopics = (prefix: string) => ({
  turns: `${prefix}turns`,
  compactions: `${prefix}compactions`,
  markers: `${prefix}markers`,
});

const turnsPerL1 = 40;
const l1PerDigest = 4;
const compactionBytes = 3_700;
const decisionBytes = 390;
/** partitionsConsumedConcurrently of each service (the resume worker keeps the contract default of 1). */
const concurrency: Record<Role, number> = { materializer: 4, compactor: 4, validator: 4, resume: 1 };

/** The compactions and decisions the shape produces for `sessions` sessions of `turns` turns each. */
export function shapeCounts(sessions: number, turns: number) {
  const l1 = Math.floor(turns / turnsPerL1);
  const digests = Math.floor(l1 / l1PerDigest);
  return {
    compactions: sessions * (l1 + digests),
    decisions: sessions * (l1 + digests + (digests > 0 ? l1PerDigest : 0)),
  };
}

type Op =
  | readonly ['HSET', string, string, Buffer | string]
  | readonly ['SET', string, string]
  | readonly ['RPUSH', string, string]
  | readonly ['LTRIM' | 'LRANGE', string, string, string];

// One script for the lua style: runs the batch's commands, the key of each in KEYS, its name and
// arguments in ARGV. Returns the replies of the reads.
const batchScript = `
local arity = { HSET = 2, SET = 1, RPUSH = 1, LTRIM = 2, LRANGE = 2 }
local out = {}
local a = 1
for k = 1, #KEYS do
  local name = ARGV[a]
  local n = arity[name]
  local reply = redis.call(name, KEYS[k], unpack(ARGV, a + 1, a + n))
  if name == 'LRANGE' then out[#out + 1] = reply end
  a = a + n + 1
end
return out`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    shapeBatch(keys: number, ...args: (string | Buffer)[]): Result<unknown[], Context>;
  }
}

/** One Redis call for a batch's commands, in the leg's style. */
function batchWriter(redis: Redis, style: RedisStyle): (ops: readonly Op[]) => Promise<void> {
  if (style === 'lua') {
    redis.defineCommand('shapeBatch', { lua: batchScript });
    return async (ops) => {
      if (ops.length === 0) return;
      const args: (string | Buffer)[] = ops.map((op) => op[1]);
      for (const [command, , ...rest] of ops) args.push(command, ...rest);
      await redis.shapeBatch(ops.length, ...args);
    };
  }
  return async (ops) => {
    if (ops.length === 0) return;
    const replies =
      (await redis.pipeline(ops.map(([name, ...args]) => [name.toLowerCase(), ...args])).exec()) ?? [];
    const failed = replies.find(([error]) => error !== null)?.[0];
    if (failed) throw failed;
  };
}

interface Group {
  readonly consumer: Consumer;
  readonly joined: Promise<void>;
  /** Rejects when the consumer crashed and kafkajs gave up on it. */
  readonly crashed: Promise<never>;
}

function group(
  kafka: Kafka,
  groupId: string,
  topic: string,
  partitions: number,
  onBatch: (batch: EachBatchPayload['batch']) => Promise<void>,
): Group {
  const consumer = kafka.consumer({
    groupId,
    readUncommitted: false,
    allowAutoTopicCreation: false,
    maxWaitTimeInMs: 500,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 5_000 },
  });
  const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
  const crashed = new Promise<never>((_, reject) =>
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart) reject(new Error(`shape group ${groupId} crashed`, { cause: payload.error }));
    }),
  );
  crashed.catch(() => undefined);
  const started = (async () => {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      partitionsConsumedConcurrently: partitions,
      eachBatch: ({ batch }) => onBatch(batch),
    });
  })();
  return { consumer, joined: started.then(() => joined), crashed };
}

export interface RunningRole {
  /** Resolves once every consumer of the role joined its group. */
  readonly joined: Promise<void>;
  /** Rejects if a consumer of the role crashed for good (the leg would never finish). */
  readonly crashed: Promise<never>;
  stop(): Promise<void>;
}

/**
 * Starts one role's consumers (and producer) in this process. `onDone` (resume only) is called once the
 * expected nodes and decisions have all been stored.
 */
export async function startRole(role: Role, at: ShapeDeployment, onDone?: () => void): Promise<RunningRole> {
  process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
  const kafka = new Kafka({
    clientId: `${at.topicPrefix}${role}`,
    brokers: [...at.brokers],
    logLevel: logLevel.ERROR,
    retry: { initialRetryTime: 100, retries: 8 },
  });
  const redis = new Redis(at.redisUrl);
  const write = batchWriter(redis, at.style);
  const topics = shapeTopics(at.topicPrefix);
  const key = (record: string, name: string) => `${at.redisPrefix}{${record}}:${name}`;
  const producer: Producer | null =
    role === 'compactor' || role === 'validator'
      ? kafka.producer({
          idempotent: true,
          maxInFlightRequests: 1,
          allowAutoTopicCreation: false,
          createPartitioner: Partitioners.DefaultPartitioner,
        })
      : null;
  await producer?.connect();
  const groupId = (name: string) => `${at.topicPrefix}${name}`;
  const groups: Group[] = [];
  const start = (name: string, topic: string, onBatch: Parameters<typeof group>[4]) =>
    groups.push(group(kafka, groupId(name), topic, concurrency[role], onBatch));

  switch (role) {
    case 'materializer':
      start(role, topics.turns, async (batch) => {
        const ops: Op[] = [];
        const applied = new Map<string, string>();
        for (const m of batch.messages) {
          const session = String(m.key);
          ops.push(['HSET', key(session, 'l0'), m.offset, m.value ?? '']);
          applied.set(session, m.offset);
        }
        for (const [session, offset] of applied) ops.push(['SET', key(session, 'applied'), offset]);
        await write(ops);
      });
      break;
    case 'compactor': {
      const turns = new Map<string, number>();
      start(role, topics.turns, async (batch) => {
        const ops: Op[] = [];
        const compactions: { key: string; value: Buffer }[] = [];
        for (const m of batch.messages) {
          const session = String(m.key);
          const window = key(session, 'window');
          ops.push(['RPUSH', window, `${batch.partition}:${m.offset}:${m.value?.length ?? 0}`]);
          const n = (turns.get(session) ?? 0) + 1;
          turns.set(session, n);
          if (n % turnsPerL1 !== 0) continue;
          ops.push(['LTRIM', window, String(-turnsPerL1), '-1']);
          const l1 = n / turnsPerL1;
          compactions.push({ key: session, value: compaction(1, 1) });
          if (l1 % l1PerDigest === 0) {
            compactions.push({
              key: session,
              value: compaction(2, l1 === l1PerDigest ? 1 + l1PerDigest : 1),
            });
          }
        }
        await write(ops);
        // As the services' producer does: requests a broker takes (a one-partition backlog's batch does not fit one).
        for (const request of requestsOf(compactions, maxRequestBytes)) {
          await producer!.send({ topic: topics.compactions, acks: -1, messages: request });
        }
      });
      break;
    }
    case 'validator':
      start(role, topics.compactions, async (batch) => {
        const ops: Op[] = [];
        const decisions: { key: string; value: Buffer }[] = [];
        for (const m of batch.messages) {
          const session = String(m.key);
          ops.push(['LRANGE', key(session, 'window'), '0', '-1']);
          const count = m.value?.[1] ?? 1;
          for (let i = 0; i < count; i++)
            decisions.push({ key: session, value: Buffer.alloc(decisionBytes, i) });
        }
        await write(ops);
        for (const request of requestsOf(decisions, maxRequestBytes)) {
          await producer!.send({ topic: topics.markers, acks: -1, messages: request });
        }
      });
      break;
    case 'resume': {
      let nodes = 0;
      let decisions = 0;
      let done = false;
      const progressed = () => {
        if (done || nodes < at.expected.compactions || decisions < at.expected.decisions) return;
        done = true;
        onDone?.();
      };
      start('resume-nodes', topics.compactions, async (batch) => {
        await write(
          batch.messages.map((m) => ['HSET', key(String(m.key), 'nodes'), m.offset, m.value ?? ''] as const),
        );
        nodes += batch.messages.length;
        progressed();
      });
      start(role, topics.markers, async (batch) => {
        await write(
          batch.messages.map(
            (m) =>
              [
                'HSET',
                key(String(m.key), 'decisions'),
                `${batch.partition}:${m.offset}`,
                m.value ?? '',
              ] as const,
          ),
        );
        decisions += batch.messages.length;
        progressed();
      });
      break;
    }
    default:
      throw new Error(`unknown role ${role satisfies never as string}`);
  }

  return {
    joined: Promise.all(groups.map((g) => g.joined)).then(() => undefined),
    crashed: Promise.race(groups.map((g) => g.crashed)),
    stop: async () => {
      await Promise.all(groups.map((g) => g.consumer.disconnect()));
      await producer?.disconnect();
      redis.disconnect();
    },
  };
}

/** A compaction-sized record: its tier, and how many decisions the validator makes for it. */
function compaction(tier: number, decisions: number): Buffer {
  const value = Buffer.alloc(compactionBytes, 0x61);
  value[0] = tier;
  value[1] = decisions;
  return value;
}
