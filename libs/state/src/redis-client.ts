import { Cluster, Redis, type ChainableCommander, type RedisOptions } from 'ioredis';

// The one place a Redis connection is made and a batch of commands is routed. Tidemark runs on one Redis
// or on a Redis Cluster (REDIS_CLUSTER_NODES): every store takes either client. A session's keys share a
// slot (their hash tag, keys.ts), so each script stays within one node; but a store's batch spans many
// sessions, and ioredis refuses a Cluster pipeline whose keys live on more than one node. `batchOf` is
// the store's pipeline on either: on a Cluster it queues the batch, sends one pipeline per node at once
// and answers the replies in the order they were queued. Commands on one node keep their order;
// commands on different nodes run concurrently (no store needs one node's command to wait for another's).

/** A single Redis or a Redis Cluster; every store takes one. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: one server (`REDIS_URL`), or a Cluster's seed nodes when `REDIS_CLUSTER_NODES` is set. */
export interface RedisEndpoint {
  readonly REDIS_URL: string;
  /** `host:port` of some of the Cluster's nodes; empty or absent: REDIS_URL is a single server. */
  readonly REDIS_CLUSTER_NODES?: readonly string[] | undefined;
}

/**
 * Connects to the endpoint: a Redis on REDIS_URL, or a Cluster over REDIS_CLUSTER_NODES, each node
 * connection with `options` (a Cluster reads enableAutoPipelining, lazyConnect and enableOfflineQueue
 * as its own).
 */
export function connectRedis(endpoint: RedisEndpoint, options: RedisOptions = {}): RedisClient {
  const seeds = endpoint.REDIS_CLUSTER_NODES ?? [];
  if (seeds.length === 0) return new Redis(endpoint.REDIS_URL, options);
  const { enableAutoPipelining, lazyConnect, enableOfflineQueue, ...redisOptions } = options;
  return new Cluster(seeds.map(clusterNode), {
    redisOptions,
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
  });
}

function clusterNode(seed: string): { host: string; port: number } {
  const at = seed.lastIndexOf(':');
  const port = Number(seed.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new RangeError(`a Redis Cluster node is host:port, not "${seed}"`);
  }
  return { host: seed.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port };
}

/**
 * A pipeline for a batch of commands whose first argument is a key (every store's batches are): the
 * client's own pipeline on one Redis; on a Cluster, one pipeline per node, sent together.
 */
export function batchOf(redis: RedisClient): ChainableCommander {
  return redis instanceof Cluster ? nodeRoutedPipeline(redis) : redis.pipeline();
}

/**
 * UNLINKs every key matching a SCAN pattern, on every primary (a Cluster's SCAN sees one node's keys);
 * returns how many. Each SCAN page is one UNLINK on one Redis; on a Cluster one per key (a command may not
 * span slots), pipelined per page.
 */
export async function unlinkMatching(redis: RedisClient, pattern: string): Promise<number> {
  const cluster = redis instanceof Cluster;
  let removed = 0;
  for (const node of cluster ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', scanPage);
      cursor = next;
      if (keys.length > 0) removed += cluster ? await unlinkEach(node, keys) : await node.unlink(...keys);
    } while (cursor !== '0');
  }
  return removed;
}

/** Keys asked for per SCAN (and so deleted per round trip while clearing). */
const scanPage = 1000;

async function unlinkEach(node: Redis, keys: readonly string[]): Promise<number> {
  const pipeline = node.pipeline();
  for (const key of keys) pipeline.unlink(key);
  const replies = (await pipeline.exec()) ?? [];
  return replies.reduce((sum, [error, n]) => {
    if (error !== null) throw error;
    return sum + Number(n);
  }, 0);
}

type Reply = [error: Error | null, result: unknown];

function nodeRoutedPipeline(cluster: Cluster): ChainableCommander {
  const queued: { readonly name: string; readonly args: unknown[] }[] = [];
  const pipeline: ChainableCommander = new Proxy({} as ChainableCommander, {
    get(_, property) {
      if (property === 'exec') return () => execOnEachNode(cluster, queued);
      if (property === 'length') return queued.length;
      // Not a thenable: `await pipeline` must not look for a `then` command.
      if (typeof property !== 'string' || property === 'then') return undefined;
      return (...args: unknown[]) => {
        queued.push({ name: property, args });
        return pipeline;
      };
    },
  });
  return pipeline;
}

async function execOnEachNode(
  cluster: Cluster,
  queued: readonly { readonly name: string; readonly args: unknown[] }[],
): Promise<Reply[]> {
  const byNode = new Map<string, { pipeline: ChainableCommander; at: number[] }>();
  queued.forEach(({ name, args }, index) => {
    const node = nodeOf(cluster, args[0]);
    let group = byNode.get(node);
    if (group === undefined) {
      group = { pipeline: cluster.pipeline(), at: [] };
      byNode.set(node, group);
    }
    (group.pipeline as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!(...args);
    group.at.push(index);
  });
  const replies: Reply[] = new Array<Reply>(queued.length);
  await Promise.all(
    [...byNode.values()].map(async ({ pipeline, at }) => {
      const results = (await pipeline.exec()) ?? [];
      results.forEach((reply, i) => (replies[at[i]!] = reply));
    }),
  );
  return replies;
}

/** The node serving the key's slot (before the client learned the slots: the slot itself). */
function nodeOf(cluster: Cluster, key: unknown): string {
  if (typeof key !== 'string' && !Buffer.isBuffer(key)) {
    throw new TypeError('a command in a routed batch must start with its key');
  }
  const slot = keySlot(key);
  return cluster.slots[slot]?.[0] ?? `slot:${slot}`;
}

/** Redis Cluster's slot of a key: CRC16 (XMODEM) of its hash tag (or of all of it), mod 16384. */
export function keySlot(key: string | Buffer): number {
  const bytes = typeof key === 'string' ? Buffer.from(key) : key;
  const open = bytes.indexOf(0x7b);
  let from = 0;
  let to = bytes.length;
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    // An empty tag (`{}`) is no tag: the whole key is hashed.
    if (close > open + 1) [from, to] = [open + 1, close];
  }
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ crc16Table[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc & 0x3fff;
}

const crc16Table = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});
