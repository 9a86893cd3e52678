import { planNodeId, sessionKey, type Compaction, type ResumePlan } from '@tidemark/core';
import type { Result } from 'ioredis';
import { luaScript, plansLayout, sessionStoreKey, type SessionRef } from './keys.js';
import { execAll } from './replies.js';
import { batchOf, type RedisClient } from './redis-client.js';
import { StoreLifecycle } from './store-lifecycle.js';

// The resume worker's state in Redis: per session, the worker's state (its fold of the markers topic with
// core's session decider: opaque JSON the worker owns), the resume plan itself, and the compaction nodes
// plans start from. Everything here is derived from the markers and compactions topics; the epoch says
// whether it still has to be rebuilt.
//
// Keys (under the prefix, one hash tag per session so one session's keys share a cluster slot):
//   resume:epoch:4              the epoch of the current store; absent = lost, never built, or built by
//                               an older version (`:2`: the session decider's state), which is rebuilt
//   resume:rebuild-lock         held by the one worker rebuilding the store
//   resume:{tenant/session}     hash: v (version), e (epoch), s (worker state JSON), p (plan JSON),
//                               n (the compaction id the plan starts from, '' for the session start)
//   resume-nodes:{tenant/session}  hash: compactionId -> Compaction JSON, and `~compactedToSeq` -> the
//                                  highest seq a stored node covers (lua/resume-put-node.lua)
//   resume-ctx:{tenant/session}    hash: context key -> the first contextHash served for it (divergence
//                                  check); expires a week after the session's last check
//   resume-seen:{tenant/session}   string: the session had a plan (set when plans expire, see below)
//
// With a retention (STATE_RETENTION_MS), every plan commit sets the plan and the nodes to expire that long
// after it (a stored node pushes the nodes' expiry on, never back): a session idle that long leaves only
// its seen key, and loads and reads report it `expired`, to be rebuilt from the markers and compactions
// topics before it is used.

/** A session's worker state as loaded: absent sessions (or sessions of another epoch) read as null. */
export interface LoadedPlanSession {
  /** The version to name in the commit (0 when absent). */
  readonly version: number;
  readonly state: string | null;
  /** The session's plan expired (idle past the retention): rebuild it before applying more. */
  readonly expired: boolean;
}

export type PlansLoaded =
  | { readonly ok: true; readonly epoch: string; readonly sessions: ReadonlyMap<string, LoadedPlanSession> }
  | { readonly ok: false; readonly reason: 'no_epoch' };

export interface PlanWrite extends SessionRef {
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
      readonly sessions: readonly SessionRef[];
    };

/** What a resume reads, in one round trip. */
export type PlanRead =
  | {
      readonly ok: true;
      readonly plan: ResumePlan | null;
      readonly node: Compaction | null;
      /** The highest L0 seq a stored node of the session covers (0 before the first). */
      readonly compactedToSeq: number;
      /** The plan expired (plan is null): rebuild it from the topics, then read again. */
      readonly expired: boolean;
    }
  | { readonly ok: false; readonly reason: 'no_epoch' };

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tidemarkResumeCommit(
      planKey: string,
      nodesKey: string,
      seenKey: string,
      ...args: (string | number)[]
    ): Result<number, Context>;
    tidemarkResumeRead(
      planKey: string,
      nodesKey: string,
      seenKey: string,
    ): Result<[string, string, string, string, number], Context>;
    tidemarkResumePutNode(
      nodesKey: string,
      compactionId: string,
      json: string,
      toSeq: number,
      retentionMs: number,
    ): Result<number, Context>;
  }
}

/** The replies of lua/resume-commit.lua, as its header lists them. */
const commitReply = { stored: 1, conflict: 0, otherEpoch: -1 } as const;

const contextHashTtlSeconds = 7 * 24 * 3600;

export class PlanStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #retentionMs: number;
  /** Epoch, rebuild lock and clear. */
  readonly lifecycle: StoreLifecycle;

  constructor(redis: RedisClient, options: { prefix?: string; retentionMs?: number } = {}) {
    this.#prefix = options.prefix ?? 'tidemark:';
    this.#retentionMs = options.retentionMs ?? 0;
    this.lifecycle = new StoreLifecycle(redis, plansLayout(this.#prefix));
    redis.defineCommand('tidemarkResumeCommit', { numberOfKeys: 3, lua: luaScript('resume-commit') });
    redis.defineCommand('tidemarkResumeRead', { numberOfKeys: 3, lua: luaScript('resume-read') });
    redis.defineCommand('tidemarkResumePutNode', { numberOfKeys: 1, lua: luaScript('resume-put-node') });
    this.#redis = redis;
  }

  #planKey(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, 'resume', ref);
  }
  #nodesKey(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, 'resume-nodes', ref);
  }
  #contextKey(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, 'resume-ctx', ref);
  }
  #seenKey(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, 'resume-seen', ref);
  }
  get #epochKey(): string {
    return this.lifecycle.layout.epochKey;
  }

  /** The store's epoch, or null when it was lost (or never built) and must be rebuilt from the topics. */
  epoch(): Promise<string | null> {
    return this.lifecycle.epoch();
  }

  /** Loads the worker state of the given sessions, in one round trip. */
  async load(sessions: readonly SessionRef[]): Promise<PlansLoaded> {
    const pipeline = batchOf(this.#redis);
    pipeline.get(this.#epochKey);
    for (const ref of sessions) {
      pipeline.hmget(this.#planKey(ref), 'v', 'e', 's');
      pipeline.exists(this.#seenKey(ref));
    }
    const replies = await execAll(pipeline);
    const epoch = replies[0] as string | null;
    if (epoch === null) return { ok: false, reason: 'no_epoch' };
    const loaded = new Map<string, LoadedPlanSession>();
    sessions.forEach((ref, i) => {
      const [v, e, s] = replies[2 * i + 1] as (string | null)[];
      const seen = replies[2 * i + 2] === 1;
      const version = v === null || v === undefined ? 0 : Number(v);
      // A session of another epoch keeps its version for the write's guard, but none of its content.
      loaded.set(sessionKey(ref.tenantId, ref.sessionId), {
        version,
        state: e === epoch ? (s ?? null) : null,
        expired: (v === null || v === undefined) && seen,
      });
    });
    return { ok: true, epoch, sessions: loaded };
  }

  /** Stores the sessions' new state and plan, one atomic script per session, one round trip. */
  async commit(epoch: string, writes: readonly PlanWrite[]): Promise<PlansCommitted> {
    if (writes.length === 0) return { ok: true };
    const pipeline = batchOf(this.#redis);
    for (const write of writes) {
      void pipeline.tidemarkResumeCommit(
        this.#planKey(write),
        this.#nodesKey(write),
        this.#seenKey(write),
        epoch,
        write.version,
        write.state,
        JSON.stringify(write.plan),
        planNodeId(write.plan) ?? '',
        this.#retentionMs,
      );
    }
    const codes = (await execAll(pipeline)) as number[];
    const failed = (code: number) =>
      writes.filter((_, i) => codes[i] === code).map(({ tenantId, sessionId }) => ({ tenantId, sessionId }));
    if (codes.includes(commitReply.otherEpoch)) {
      return { ok: false, reason: 'epoch', sessions: failed(commitReply.otherEpoch) };
    }
    if (codes.includes(commitReply.conflict)) {
      return { ok: false, reason: 'conflict', sessions: failed(commitReply.conflict) };
    }
    return { ok: true };
  }

  /** Stores compaction nodes (a plan may start from any of them later), one round trip. */
  async putNodes(nodes: readonly Compaction[]): Promise<void> {
    if (nodes.length === 0) return;
    const pipeline = batchOf(this.#redis);
    for (const node of nodes) {
      void pipeline.tidemarkResumePutNode(
        this.#nodesKey(node),
        node.compactionId,
        JSON.stringify(node),
        node.span.toSeq,
        this.#retentionMs,
      );
    }
    await execAll(pipeline);
  }

  /**
   * The session's plan and the node it starts from, in one round trip. The epoch is read after the plan
   * (on one Redis): a plan of the epoch still in force then was in force when read (epochs never repeat).
   */
  async read(ref: SessionRef): Promise<PlanRead> {
    const [stored, epoch] = (await execAll(
      batchOf(this.#redis)
        .tidemarkResumeRead(this.#planKey(ref), this.#nodesKey(ref), this.#seenKey(ref))
        .get(this.#epochKey),
    )) as [[string, string, string, string, number], string | null];
    if (epoch === null) return { ok: false, reason: 'no_epoch' };
    const [planEpoch, plan, node, compacted, expired] = stored;
    const current = planEpoch === epoch;
    return {
      ok: true,
      plan: current && plan !== '' ? (JSON.parse(plan) as ResumePlan) : null,
      node: current && node !== '' ? (JSON.parse(node) as Compaction) : null,
      compactedToSeq: compacted === '' ? 0 : Number(compacted),
      expired: expired === 1,
    };
  }

  /**
   * One stored node of the session (null: none by that id), with whether the session's plan expired (its
   * nodes with it): one round trip.
   */
  async node(
    ref: SessionRef,
    compactionId: string,
  ): Promise<
    | {
        readonly ok: true;
        readonly epoch: string;
        readonly node: Compaction | null;
        readonly expired: boolean;
      }
    | { readonly ok: false; readonly reason: 'no_epoch' }
  > {
    const [epoch, json, plan, seen] = (await execAll(
      batchOf(this.#redis)
        .get(this.#epochKey)
        .hget(this.#nodesKey(ref), compactionId)
        .exists(this.#planKey(ref))
        .exists(this.#seenKey(ref)),
    )) as [string | null, string | null, number, number];
    if (epoch === null) return { ok: false, reason: 'no_epoch' };
    return {
      ok: true,
      epoch,
      node: json === null ? null : (JSON.parse(json) as Compaction),
      expired: plan === 0 && seen === 1,
    };
  }

  /**
   * Records the contextHash served for a context key (the node and the raw span), and returns the hash
   * first served for it: a different one is a divergence. One round trip.
   */
  async recordContextHash(ref: SessionRef, contextKey: string, contextHash: string): Promise<string> {
    const key = this.#contextKey(ref);
    // Kept for a week after the session's last check: the hash grows with each new raw span.
    const replies = await execAll(
      this.#redis
        .multi()
        .hsetnx(key, contextKey, contextHash)
        .hget(key, contextKey)
        .expire(key, contextHashTtlSeconds),
    );
    return (replies[1] as string | null) ?? contextHash;
  }
}

/** The compaction a plan starts from (core's rule, re-exported for the store's readers). */
export { planNodeId };
