import { planNodeId, sessionKey, type Compaction, type ResumePlan } from '@tidemark/core';
import type { Redis } from 'ioredis';
import { luaScript, sessionTag } from './keys.js';

// The resume worker's state in Redis: per session, the worker's state (its fold of the markers topic with
// core's session decider: opaque JSON the worker owns), the resume plan itself, and the compaction nodes
// plans start from. Everything here is derived from the markers and compactions topics; the epoch says
// whether it still has to be rebuilt.
//
// Keys (under the prefix, one hash tag per session so one session's keys share a cluster slot):
//   resume:epoch:2              the epoch of the current store; absent = lost, never built, or built by
//                               an older version (`:2`: the session decider's state), which is rebuilt
//   resume:rebuild-lock         held by the one worker rebuilding the store
//   resume:{tenant/session}     hash: v (version), e (epoch), s (worker state JSON), p (plan JSON),
//                               n (the compaction id the plan starts from, '' for the session start)
//   resume-nodes:{tenant/session}  hash: compactionId -> Compaction JSON
//   resume-ctx:{tenant/session}    hash: context key -> the first contextHash served for it (divergence
//                                  check); expires a week after the session's last check

export interface PlanSessionRef {
  readonly tenantId: string;
  readonly sessionId: string;
}

/** A session's worker state as loaded: absent sessions (or sessions of another epoch) read as null. */
export interface LoadedPlanSession {
  /** The version to name in the commit (0 when absent). */
  readonly version: number;
  readonly state: string | null;
}

export type PlansLoaded =
  | { readonly ok: true; readonly epoch: string; readonly sessions: ReadonlyMap<string, LoadedPlanSession> }
  | { readonly ok: false; readonly reason: 'no_epoch' };

export interface PlanWrite extends PlanSessionRef {
  readonly version: number;
  /** The worker's session plan state (core's frame state, the last offset, the plan): JSON it parses itself. */
  readonly state: string;
  readonly plan: ResumePlan;
}

export type PlansCommitted =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /** conflict: another writer moved a session (a rebalance); epoch: the store was lost or rebuilt. */
      readonly reason: 'conflict' | 'epoch';
      readonly sessions: readonly PlanSessionRef[];
    };

/** What a resume reads, in one round trip. */
export type PlanRead =
  | { readonly ok: true; readonly plan: ResumePlan | null; readonly node: Compaction | null }
  | { readonly ok: false; readonly reason: 'no_epoch' };

interface PlanCommands {
  tidemarkResumeCommit(planKey: string, ...args: (string | number)[]): Promise<number>;
  tidemarkResumeRead(planKey: string, nodesKey: string, epochKey: string): Promise<[string, string, string]>;
}

const contextHashTtlSeconds = 7 * 24 * 3600;

export class PlanStore {
  readonly #redis: Redis & PlanCommands;
  readonly #prefix: string;

  constructor(redis: Redis, options: { prefix?: string } = {}) {
    this.#prefix = options.prefix ?? 'tidemark:';
    redis.defineCommand('tidemarkResumeCommit', { numberOfKeys: 1, lua: luaScript('resume-commit') });
    redis.defineCommand('tidemarkResumeRead', { numberOfKeys: 3, lua: luaScript('resume-read') });
    this.#redis = redis as Redis & PlanCommands;
  }

  #planKey(ref: PlanSessionRef): string {
    return `${this.#prefix}resume:${sessionTag(ref)}`;
  }
  #nodesKey(ref: PlanSessionRef): string {
    return `${this.#prefix}resume-nodes:${sessionTag(ref)}`;
  }
  #contextKey(ref: PlanSessionRef): string {
    return `${this.#prefix}resume-ctx:${sessionTag(ref)}`;
  }
  get #epochKey(): string {
    return `${this.#prefix}resume:epoch:2`;
  }
  get #lockKey(): string {
    return `${this.#prefix}resume:rebuild-lock`;
  }

  /** Takes the rebuild lock for `ttlMs` (one worker rebuilds, the others wait for the epoch). */
  async lockRebuild(owner: string, ttlMs: number): Promise<boolean> {
    return (await this.#redis.set(this.#lockKey, owner, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async unlockRebuild(owner: string): Promise<void> {
    // Only the owner's lock: compare and delete in one step.
    await this.#redis.eval(
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
      1,
      this.#lockKey,
      owner,
    );
  }

  /** The store's epoch, or null when it was lost (or never built) and must be rebuilt from the topics. */
  async epoch(): Promise<string | null> {
    return this.#redis.get(this.#epochKey);
  }

  /** Publishes an epoch once the store is (re)built; returns the epoch in force (another worker's, if it won). */
  async establishEpoch(epoch: string): Promise<string> {
    await this.#redis.set(this.#epochKey, epoch, 'NX');
    return (await this.epoch()) ?? epoch;
  }

  /** Loads the worker state of the given sessions, in one round trip. */
  async load(sessions: readonly PlanSessionRef[]): Promise<PlansLoaded> {
    const pipeline = this.#redis.pipeline();
    pipeline.get(this.#epochKey);
    for (const ref of sessions) pipeline.hmget(this.#planKey(ref), 'v', 'e', 's');
    const replies = unwrap(await pipeline.exec());
    const epoch = replies[0] as string | null;
    if (epoch === null) return { ok: false, reason: 'no_epoch' };
    const loaded = new Map<string, LoadedPlanSession>();
    sessions.forEach((ref, i) => {
      const [v, e, s] = replies[i + 1] as (string | null)[];
      const version = v === null || v === undefined ? 0 : Number(v);
      // A session of another epoch keeps its version for the write's guard, but none of its content.
      loaded.set(sessionKey(ref.tenantId, ref.sessionId), {
        version,
        state: e === epoch ? (s ?? null) : null,
      });
    });
    return { ok: true, epoch, sessions: loaded };
  }

  /** Stores the sessions' new state and plan, one atomic script per session, one round trip. */
  async commit(epoch: string, writes: readonly PlanWrite[]): Promise<PlansCommitted> {
    if (writes.length === 0) return { ok: true };
    const pipeline = this.#redis.pipeline() as unknown as PlanCommands & {
      exec(): Promise<[Error | null, unknown][] | null>;
    };
    for (const write of writes) {
      void pipeline.tidemarkResumeCommit(
        this.#planKey(write),
        epoch,
        write.version,
        write.state,
        JSON.stringify(write.plan),
        planNodeId(write.plan) ?? '',
      );
    }
    const codes = unwrap(await pipeline.exec()) as number[];
    const failed = (code: number) =>
      writes.filter((_, i) => codes[i] === code).map(({ tenantId, sessionId }) => ({ tenantId, sessionId }));
    if (codes.includes(-1)) return { ok: false, reason: 'epoch', sessions: failed(-1) };
    if (codes.includes(0)) return { ok: false, reason: 'conflict', sessions: failed(0) };
    return { ok: true };
  }

  /** Stores compaction nodes (a plan may start from any of them later), one round trip. */
  async putNodes(nodes: readonly Compaction[]): Promise<void> {
    if (nodes.length === 0) return;
    const pipeline = this.#redis.pipeline();
    for (const node of nodes) pipeline.hset(this.#nodesKey(node), node.compactionId, JSON.stringify(node));
    unwrap(await pipeline.exec());
  }

  /** The session's plan and the node it starts from, in one round trip. */
  async read(ref: PlanSessionRef): Promise<PlanRead> {
    const [epoch, plan, node] = await this.#redis.tidemarkResumeRead(
      this.#planKey(ref),
      this.#nodesKey(ref),
      this.#epochKey,
    );
    if (epoch === '') return { ok: false, reason: 'no_epoch' };
    return {
      ok: true,
      plan: plan === '' ? null : (JSON.parse(plan) as ResumePlan),
      node: node === '' ? null : (JSON.parse(node) as Compaction),
    };
  }

  /**
   * Records the contextHash served for a context key (the node and the raw span), and returns the hash
   * first served for it: a different one is a divergence. One round trip.
   */
  async recordContextHash(ref: PlanSessionRef, contextKey: string, contextHash: string): Promise<string> {
    const key = this.#contextKey(ref);
    // Kept for a week after the session's last check: the hash grows with each new raw span.
    const replies = unwrap(
      await this.#redis
        .multi()
        .hsetnx(key, contextKey, contextHash)
        .hget(key, contextKey)
        .expire(key, contextHashTtlSeconds)
        .exec(),
    );
    return (replies[1] as string | null) ?? contextHash;
  }

  /** Removes every session of the store (before a rebuild): nothing of an old epoch survives it. */
  async clear(): Promise<void> {
    for (const pattern of [
      `${this.#prefix}resume:{*`,
      `${this.#prefix}resume-nodes:{*`,
      `${this.#prefix}resume-ctx:{*`,
    ]) {
      let cursor = '0';
      do {
        const [next, keys] = await this.#redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await this.#redis.unlink(...keys);
      } while (cursor !== '0');
    }
  }
}

/** The compaction a plan starts from (core's rule, re-exported for the store's readers). */
export { planNodeId };

function unwrap(results: [Error | null, unknown][] | null): unknown[] {
  if (results === null) throw new Error('redis pipeline was discarded');
  return results.map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}
