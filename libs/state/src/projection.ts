import { randomUUID } from 'node:crypto';
import { type BoundaryQuery, type DeadLetterReason, type StateAtBoundary } from '@tidemark/core';
import type { ChainableCommander, Result } from 'ioredis';
import { luaScript, projectionLayout, rebuildingKey, sessionKeys, stalledIndexKey } from './keys.js';
import {
  queueApply,
  readStall,
  type ApplyOutcome,
  type AppliedBatch,
  type ReleasedTurn,
  type StallChange,
} from './projection-apply.js';
import type { PositionedTurn } from './projection-plan.js';
import { ParsedItems } from './parsed-items.js';
import {
  parsePosition,
  readStateAt,
  readWatermark,
  stateAtArgs,
  type L0Position,
  type Watermark,
} from './projection-read.js';
import { execAll } from './replies.js';
import { batchOf, type RedisClient } from './redis-client.js';
import { StoreLifecycle } from './store-lifecycle.js';

// The L0 projection: each session's turns folded into Redis by the materializer, read by the validator
// (stateAt, waitForWatermark) and the resume worker (l0Position). It follows core's SessionFold rule for
// rule, and answers stateAt exactly as SessionFold.stateAt does; the integration tests compare the two.
//
// Writes are one Lua script call per session and batch (projection-apply-turns.lua), each turn in it one
// atomic step, all pipelined: one round trip per batch.
// Reads are one script (stateAt) or one pipeline (watermark, wait). Nothing here cannot be rebuilt from
// L0: the epoch key says whether the projection is still the one built from it (Redis keeps nothing on
// disk and may be flushed), and a rebuild starts over under a new epoch.

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tidemarkProjectionApply(...args: (string | number)[]): Result<unknown[], Context>;
    tidemarkProjectionStateAt(...args: (string | number)[]): Result<unknown[], Context>;
    tidemarkProjectionWatermark(...args: string[]): Result<unknown[], Context>;
    tidemarkProjectionMarkBroken(...args: (string | number)[]): Result<unknown[], Context>;
  }
}

const scripts = {
  apply: luaScript('projection-apply-turns'),
  stateAt: luaScript('projection-state-at'),
  watermark: luaScript('projection-watermark'),
  markBroken: luaScript('projection-mark-broken'),
};

/**
 * Reads another store sends in the apply's round trip (after its scripts, so they see the batch applied):
 * queued on the pipeline, `replies` commands read back by `read`.
 */
export interface AlongsideRead<T> {
  queue(pipeline: ChainableCommander): { readonly replies: number; read(replies: readonly unknown[]): T };
}

/** A batch applied under an epoch: its outcomes, or the news that the projection is no longer that epoch's. */
export type EpochApply<T = undefined> =
  | {
      readonly ok: true;
      /** What the alongside read answered (undefined without one). */
      readonly alongside: T;
      readonly outcomes: readonly ApplyOutcome[];
      /** Parked turns whose gap this batch filled: the caller re-publishes them to turns.l0. */
      readonly released: readonly ReleasedTurn[];
      /** Sessions that began or ceased to be stalled in this batch (already in the stalled index). */
      readonly stalls: readonly StallChange[];
    }
  | {
      readonly ok: false;
      /** The projection was lost (flushed) or rebuilt under another epoch: the outcomes cannot be trusted. */
      readonly reason: 'epoch_changed';
      readonly epoch: string | null;
    };

export type WaitOutcome =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /**
       * timeout: not applied that far within the bound. broken: the session is broken at or before the
       * seq (or the watermark is stuck behind a gap). rebuilding: the projection is lost or being rebuilt
       * and has not reached the seq within the bound.
       */
      readonly reason: 'timeout' | 'broken' | 'rebuilding';
    };

/** A rebuild under way: its epoch, why, and since when (epoch milliseconds). */
export interface RebuildMark {
  readonly epoch: string | null;
  readonly reason: string;
  readonly since: number;
}

export interface ProjectionOptions {
  /** Prepended to every key (default `tidemark:`, the services' REDIS_PREFIX default). */
  readonly prefix?: string;
  /** waitForWatermark polls between these intervals, backing off (default 2 → 25 ms). */
  readonly pollMinMs?: number;
  readonly pollMaxMs?: number;
  /**
   * How many early turns (past a missing one) a session parks until the missing one arrives (default
   * 1,000); a later one is refused as seq_gap, a dead letter, and breaks the session at its seq.
   */
  readonly maxParkedTurns?: number;
}

/** The default of ProjectionOptions.maxParkedTurns. */
export const defaultMaxParkedTurns = 1000;

export class Projection {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #pollMinMs: number;
  readonly #pollMaxMs: number;
  readonly #maxParked: number;
  /** The items of recent state-at replies, parsed once (see ParsedItems). */
  readonly #parsedItems = new ParsedItems();

  /** Epoch and clear; a rebuild also sets the rebuilding mark (beginRebuild, finishRebuild). */
  readonly lifecycle: StoreLifecycle;

  constructor(redis: RedisClient, options: ProjectionOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'tidemark:';
    this.lifecycle = new StoreLifecycle(redis, projectionLayout(this.#prefix));
    this.#pollMinMs = options.pollMinMs ?? 2;
    this.#pollMaxMs = options.pollMaxMs ?? 25;
    this.#maxParked = options.maxParkedTurns ?? defaultMaxParkedTurns;
    // defineCommand keeps one script per name and connection; loading it again is harmless.
    redis.defineCommand('tidemarkProjectionApply', { numberOfKeys: 13, lua: scripts.apply });
    redis.defineCommand('tidemarkProjectionStateAt', { numberOfKeys: 10, lua: scripts.stateAt });
    redis.defineCommand('tidemarkProjectionWatermark', { numberOfKeys: 2, lua: scripts.watermark });
    redis.defineCommand('tidemarkProjectionMarkBroken', { numberOfKeys: 3, lua: scripts.markBroken });
  }

  get prefix(): string {
    return this.#prefix;
  }

  get #epochKey(): string {
    return this.lifecycle.layout.epochKey;
  }

  /**
   * Applies turns in order (each turn one atomic step), in one round trip. Sets the epoch if there is
   * none (the first apply). For tests and single writers: the materializer uses applyBatchInEpoch, which
   * notices a projection lost in between instead of starting a new one over it.
   */
  async applyBatch(turns: readonly PositionedTurn[]): Promise<ApplyOutcome[]> {
    return (await this.applyTurns(turns)).outcomes;
  }

  /** applyBatch, with the turns it released from parking and the stalls it changed. */
  async applyTurns(turns: readonly PositionedTurn[]): Promise<AppliedBatch> {
    const pipeline = batchOf(this.#redis);
    pipeline.set(this.#epochKey, newEpoch(), 'NX');
    const finish = queueApply(pipeline, this.#prefix, turns, this.#maxParked);
    const replies = await execAll(pipeline);
    const applied = finish(replies.slice(1));
    if (applied.stalls.length > 0) await this.#indexStalls(applied.stalls);
    return applied;
  }

  /**
   * Applies turns as applyBatch does, but only trusts the result if the projection is still of `epoch`
   * after the last script ran (checked in the same round trip). A flush before or during the batch shows
   * as `epoch_changed`; the caller rebuilds and must not act on the outcomes (a refusal there may be an
   * artefact of the lost state).
   */
  async applyBatchInEpoch<T = undefined>(
    epoch: string,
    turns: readonly PositionedTurn[],
    alongside?: AlongsideRead<T>,
  ): Promise<EpochApply<T>> {
    const pipeline = batchOf(this.#redis);
    const finish = queueApply(pipeline, this.#prefix, turns, this.#maxParked);
    const extra = alongside?.queue(pipeline);
    pipeline.get(this.#epochKey);
    const replies = await execAll(pipeline);
    const current = replies[replies.length - 1] as string | null;
    if (current !== epoch) return { ok: false, reason: 'epoch_changed', epoch: current };
    const own = replies.length - 1 - (extra?.replies ?? 0);
    const { outcomes, released, stalls } = finish(replies.slice(0, own));
    const read = extra?.read(replies.slice(own, -1)) as T;
    if (stalls.length > 0) await this.#indexStalls(stalls);
    return { ok: true, outcomes, released, stalls, alongside: read };
  }

  /**
   * How many sessions are stalled: waiting for a turn past their watermark that is not at hand (refused,
   * or missing before parked turns). Reconciles the index with the sessions' marks as it counts (O(stalled sessions), a rare few): an entry whose
   * session is no longer stalled (a crash lost the removal that followed the apply that ended the stall)
   * is dropped.
   */
  async stalledSessions(): Promise<number> {
    const key = stalledIndexKey(this.#prefix);
    const members = await this.#redis.zrange(key, 0, -1);
    if (members.length === 0) return 0;
    // A member is the session's meta key; read together (auto-pipelined, each on its own slot).
    const marks = await Promise.all(members.map((meta) => this.#redis.hget(meta, 'stalledAt')));
    const stale = members.filter((_, i) => marks[i] === null);
    if (stale.length > 0) await this.#redis.zrem(key, ...stale);
    return members.length - stale.length;
  }

  /**
   * Keeps the stalled index in step with the sessions' marks: one round trip, only in a batch that
   * touched a session that is or was stalled (rare). Every such batch re-asserts the entry, so a crash
   * between the scripts and this write is mended by the batch's redelivery; an entry a crash left behind
   * is dropped when the gauge reads the index. The marks themselves (what status and resume read) are
   * never wrong.
   */
  async #indexStalls(stalls: readonly StallChange[]): Promise<void> {
    if (stalls.length === 0) return;
    const key = stalledIndexKey(this.#prefix);
    const pipeline = batchOf(this.#redis);
    for (const stall of stalls) {
      const member = sessionKeys(this.#prefix, stall.tenantId, stall.sessionId).meta;
      if (stall.change === 'ended') pipeline.zrem(key, member);
      else pipeline.zadd(key, stall.since, member);
    }
    await execAll(pipeline);
  }

  /** The state at the query's boundary, exactly as core's SessionFold.stateAt answers it; one round trip. */
  async stateAt(query: BoundaryQuery): Promise<StateAtBoundary> {
    const reply = await this.#redis.tidemarkProjectionStateAt(...stateAtArgs(this.#prefix, query));
    return readStateAt(query, reply, this.#parsedItems);
  }

  async watermark(tenantId: string, sessionId: string): Promise<Watermark> {
    const keys = sessionKeys(this.#prefix, tenantId, sessionId);
    return readWatermark(await this.#redis.tidemarkProjectionWatermark(keys.meta, keys.turns));
  }

  /**
   * Waits, polling with backoff up to `timeoutMs`, until the session is applied up to `seq`. Answers at
   * once when the session is broken at or before `seq` (or stuck behind a gap before it). While the
   * projection is lost or rebuilding it keeps waiting, and answers `rebuilding` at the bound: never ok on
   * missing state.
   */
  async waitForWatermark(
    tenantId: string,
    sessionId: string,
    seq: number,
    timeoutMs: number,
  ): Promise<WaitOutcome> {
    const deadline = Date.now() + timeoutMs;
    let pause = this.#pollMinMs;
    for (;;) {
      const pipeline = batchOf(this.#redis);
      const keys = sessionKeys(this.#prefix, tenantId, sessionId);
      void pipeline.tidemarkProjectionWatermark(keys.meta, keys.turns);
      pipeline.get(this.#epochKey);
      pipeline.exists(rebuildingKey(this.#prefix));
      const [raw, epoch, rebuilding] = (await execAll(pipeline)) as [unknown[], string | null, number];
      const watermark = readWatermark(raw);
      const lost = epoch === null;
      if (!lost) {
        const { broken, appliedSeq } = watermark;
        if (broken !== null && (seq >= broken.seq || appliedSeq < seq))
          return { ok: false, reason: 'broken' };
        if (appliedSeq >= seq) return { ok: true };
      }
      const left = deadline - Date.now();
      if (left <= 0) return { ok: false, reason: lost || rebuilding === 1 ? 'rebuilding' : 'timeout' };
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, this.#pollMaxMs);
    }
  }

  /** Where the session's turn at `seq` lives in turns.l0, if it was applied. */
  async l0Position(tenantId: string, sessionId: string, seq: number): Promise<L0Position | null> {
    const keys = sessionKeys(this.#prefix, tenantId, sessionId);
    const turn = await this.#redis.hget(keys.turns, String(seq));
    return turn === null ? null : parsePosition(turn.slice(turn.indexOf('|') + 1));
  }

  /** The projection's epoch; null when it was lost (Redis flushed) or never built: rebuild from L0. */
  epoch(): Promise<string | null> {
    return this.lifecycle.epoch();
  }

  /** The epoch while the projection is whole (no rebuild under way), else null. */
  async wholeEpoch(): Promise<string | null> {
    const [epoch, mark] = await Promise.all([this.epoch(), this.rebuilding()]);
    return mark === null ? epoch : null;
  }

  /** The rebuild under way, or null. */
  async rebuilding(): Promise<RebuildMark | null> {
    const raw = await this.#redis.get(rebuildingKey(this.#prefix));
    return raw === null ? null : (JSON.parse(raw) as RebuildMark);
  }

  /**
   * Starts a rebuild: marks it (readers wait or answer `rebuilding`), removes every session of the
   * projection, and sets a new epoch, which it returns. The caller then replays L0 from the beginning with
   * applyBatchInEpoch and calls finishRebuild.
   */
  async beginRebuild(reason: string): Promise<string> {
    const epoch = newEpoch();
    const mark: RebuildMark = { epoch, reason, since: Date.now() };
    await this.#redis.set(rebuildingKey(this.#prefix), JSON.stringify(mark));
    // The epoch is dropped first: a writer still on the old one stops trusting its batches from here on.
    await this.lifecycle.reset(epoch);
    return epoch;
  }

  /** Ends the rebuild of `epoch`; false (and nothing done) if the projection has moved to another epoch. */
  async finishRebuild(epoch: string): Promise<boolean> {
    const pipeline = batchOf(this.#redis);
    pipeline.get(this.#epochKey);
    pipeline.get(rebuildingKey(this.#prefix));
    const [current, raw] = (await execAll(pipeline)) as [string | null, string | null];
    if (current !== epoch) return false;
    if (raw !== null && (JSON.parse(raw) as RebuildMark).epoch === epoch) {
      await this.#redis.del(rebuildingKey(this.#prefix));
    }
    return true;
  }

  /**
   * Declares the projection lost (the `rebuild` command): drops the epoch and marks a rebuild as asked
   * for. A running materializer notices and rebuilds; readers wait or answer `rebuilding` meanwhile.
   */
  async invalidate(reason: string): Promise<void> {
    const mark: RebuildMark = { epoch: null, reason, since: Date.now() };
    const pipeline = batchOf(this.#redis);
    pipeline.set(rebuildingKey(this.#prefix), JSON.stringify(mark));
    pipeline.del(this.#epochKey);
    await execAll(pipeline);
  }

  /**
   * Marks a session broken at `seq` (the earliest mark is kept) for a turn refused before the projection
   * saw it; applyBatch marks its own refusals.
   */
  async markBroken(
    tenantId: string,
    sessionId: string,
    seq: number,
    reason: DeadLetterReason,
  ): Promise<void> {
    const keys = sessionKeys(this.#prefix, tenantId, sessionId);
    const [, stall] = await this.#redis.tidemarkProjectionMarkBroken(
      keys.meta,
      keys.parked,
      keys.turns,
      Number.isSafeInteger(seq) && seq > 0 ? seq : 0,
      reason,
    );
    const stalls: StallChange[] = [];
    readStall({ tenantId, sessionId }, stall, stalls);
    await this.#indexStalls(stalls);
  }
}

function newEpoch(): string {
  return `${new Date().toISOString()}/${randomUUID()}`;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
