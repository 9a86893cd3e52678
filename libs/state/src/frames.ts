import { initialState, sessionKey, type MarkerDecision, type SessionFrameState } from '@tidemark/core';
import type { Result } from 'ioredis';
import { framesLayout, luaScript, sessionStoreKey, type SessionRef } from './keys.js';
import { execAll } from './replies.js';
import { batchOf, type RedisClient } from './redis-client.js';
import { StoreLifecycle } from './store-lifecycle.js';

// The validator's own state in Redis: per session, the session decider's state (core session-frame),
// and which compactions were already decided. Everything here can be
// rebuilt from the markers topic; the epoch says whether it still has to be.
//
// Keys (under the prefix, one hash tag per session so one session's keys share a cluster slot):
//   frames:epoch:4               the epoch of the current store; absent = lost, never built, or built by
//                                an older version (`:2`: the session decider's state), which is rebuilt
//   frames:lock                  held by the one validator rebuilding the store
//   frame:{tenant/session}       hash: v (version), e (epoch), s (the decider's state, JSON)
//   decided:{tenant/session}     hash: compactionId -> decided record JSON
//   frame-seen:{tenant/session}  string: the session had a frame (set when frames expire, see below)
//
// With a retention (STATE_RETENTION_MS), every write sets frame and decided to expire that long after
// it, together: a session idle that long leaves only its seen key, and the next load reports it
// `expired`, to be rebuilt from the markers topic (`restoreExpired`) before anything is decided on it.
//
// Writes are write-ahead: the decisions of a batch are recorded (pending) before they are published,
// and confirmed (published) after, so a crash in between re-publishes the recorded bytes instead of
// deciding again on a state that may have moved (a timeout that is no longer one, say).

/** A session's frame state as the store holds it. */
export interface SessionFrame {
  readonly state: SessionFrameState;
  /** What a write must find unchanged (compare-and-set): bumped by every write. */
  readonly guard: FrameGuard;
}

/** The version and epoch a session was read at; a write succeeds only if both are still there. */
export interface FrameGuard {
  readonly version: number;
  /** '' for a session the store did not have. */
  readonly epoch: string;
}

/** What the store knows of one compaction. */
export type DecidedRecord =
  /** Decided and recorded; maybe published. A redelivery re-publishes exactly these decisions. */
  | { readonly status: 'pending'; readonly decisions: readonly MarkerDecision[] }
  /** Durably on the markers topic: a redelivery publishes nothing. */
  | { readonly status: 'published' };

export interface FrameLoad extends SessionRef {
  /** The compactions whose records to read along with the frame. */
  readonly compactionIds: readonly string[];
}

export interface LoadedSession {
  readonly frame: SessionFrame;
  /** The session's frame expired (it was idle past the retention): rebuild it before deciding. */
  readonly expired: boolean;
  /** Records of the requested compactions the store has (absent = never decided). */
  readonly decided: ReadonlyMap<string, DecidedRecord>;
}

export type FramesLoaded =
  | { readonly ok: true; readonly epoch: string; readonly sessions: ReadonlyMap<string, LoadedSession> }
  | { readonly ok: false; readonly reason: 'no_epoch' };

export interface FrameWrite extends SessionRef {
  /** The guard the frame was loaded with. */
  readonly guard: FrameGuard;
  readonly state: SessionFrameState;
  /** The compactions decided, each with every decision its verdict publishes, in publish order. */
  readonly decided: readonly {
    readonly compactionId: string;
    readonly decisions: readonly MarkerDecision[];
  }[];
}

export type FramesRecorded =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /** conflict: another writer moved a session (a rebalance); epoch: the store was lost or rebuilt. */
      readonly reason: 'conflict' | 'epoch';
      readonly sessions: readonly SessionRef[];
    };

/** A session's rebuilt state, for `FrameStore.restore`. */
export interface RestoredSession extends SessionRef {
  readonly state: SessionFrameState;
  /** Every compaction whose verdict is on the markers topic. */
  readonly published: readonly string[];
}

const publishedJson = JSON.stringify({ status: 'published' } satisfies DecidedRecord);

declare module 'ioredis' {
  interface RedisCommander<Context> {
    validatorRecord(
      frameKey: string,
      decidedKey: string,
      seenKey: string,
      ...args: (string | number)[]
    ): Result<number, Context>;
    validatorConfirm(frameKey: string, decidedKey: string, ...args: string[]): Result<number, Context>;
  }
}

/** The replies of lua/validator-record.lua and lua/validator-confirm.lua, as their headers list them. */
const recordReply = { recorded: 1, conflict: 0 } as const;
const confirmReply = { notThisEpoch: -1 } as const;

export class FrameStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  /** Epoch, rebuild lock and clear (a rebuild runs `withRebuildLock` over it, then `restore`). */
  readonly lifecycle: StoreLifecycle;

  readonly #retentionMs: number;

  constructor(redis: RedisClient, options: { prefix?: string; retentionMs?: number } = {}) {
    this.#prefix = options.prefix ?? 'tidemark:';
    this.#retentionMs = options.retentionMs ?? 0;
    this.lifecycle = new StoreLifecycle(redis, framesLayout(this.#prefix));
    // defineCommand is idempotent per name on a connection; several stores may share one.
    redis.defineCommand('validatorRecord', { numberOfKeys: 3, lua: luaScript('validator-record') });
    redis.defineCommand('validatorConfirm', { numberOfKeys: 2, lua: luaScript('validator-confirm') });
    this.#redis = redis;
  }

  #frameKey(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, 'frame', ref);
  }
  #decidedKey(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, 'decided', ref);
  }
  #seenKey(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, 'frame-seen', ref);
  }
  get #epochKey(): string {
    return this.lifecycle.layout.epochKey;
  }

  /** The store's epoch, or null when it was lost (or never built) and must be rebuilt first. */
  epoch(): Promise<string | null> {
    return this.lifecycle.epoch();
  }

  /**
   * The frames of the given sessions and the records of the given compactions, in one round trip.
   * Sessions of another epoch (written before a loss, by a straggler) read as absent.
   */
  async load(sessions: readonly FrameLoad[]): Promise<FramesLoaded> {
    const pipeline = batchOf(this.#redis);
    pipeline.get(this.#epochKey);
    for (const ref of sessions) {
      pipeline.hmget(this.#frameKey(ref), 'v', 'e', 's');
      pipeline.exists(this.#seenKey(ref));
      if (ref.compactionIds.length > 0) pipeline.hmget(this.#decidedKey(ref), ...ref.compactionIds);
    }
    const replies = await execAll(pipeline);
    const epoch = replies[0] as string | null;
    if (epoch === null) return { ok: false, reason: 'no_epoch' };
    const loaded = new Map<string, LoadedSession>();
    let index = 1;
    for (const ref of sessions) {
      const [v, e, s] = replies[index++] as (string | null)[];
      const seen = replies[index++] === 1;
      const records = ref.compactionIds.length > 0 ? (replies[index++] as (string | null)[]) : [];
      const guard: FrameGuard = { version: v == null ? 0 : Number(v), epoch: e ?? '' };
      // A session of another epoch (a straggler's write around a rebuild) reads as absent: its
      // content is not this epoch's truth; its guard lets the next write replace it.
      const current = e === epoch && s != null;
      const state = current ? (JSON.parse(s) as SessionFrameState) : initialState;
      const decided = new Map<string, DecidedRecord>();
      if (current) {
        ref.compactionIds.forEach((id, i) => {
          const record = records[i];
          if (record != null) decided.set(id, JSON.parse(record) as DecidedRecord);
        });
      }
      loaded.set(sessionKeyOf(ref), { frame: { state, guard }, expired: v == null && seen, decided });
    }
    return { ok: true, epoch, sessions: loaded };
  }

  /** Records decisions (pending) and the sessions' new frames, one atomic script per session, one round trip. */
  async record(epoch: string, writes: readonly FrameWrite[]): Promise<FramesRecorded> {
    if (writes.length === 0) return { ok: true };
    const pipeline = batchOf(this.#redis);
    // The epoch first, in the same round trip: a store lost since the load is reported as such (the
    // scripts' own guard catches every session it had; a new session's write is cleared by the rebuild).
    pipeline.get(this.#epochKey);
    for (const write of writes) {
      const args: (string | number)[] = [
        epoch,
        write.guard.version,
        write.guard.epoch,
        JSON.stringify(write.state),
        this.#retentionMs,
      ];
      for (const { compactionId, decisions } of write.decided) {
        args.push(compactionId, JSON.stringify({ status: 'pending', decisions } satisfies DecidedRecord));
      }
      void pipeline.validatorRecord(
        this.#frameKey(write),
        this.#decidedKey(write),
        this.#seenKey(write),
        ...args,
      );
    }
    const [current, ...codes] = (await execAll(pipeline)) as [string | null, ...number[]];
    const sessions = (test: (code: number) => boolean) =>
      writes.filter((_, i) => test(codes[i]!)).map(({ tenantId, sessionId }) => ({ tenantId, sessionId }));
    if (current !== epoch) return { ok: false, reason: 'epoch', sessions: sessions(() => true) };
    if (codes.includes(recordReply.conflict)) {
      return { ok: false, reason: 'conflict', sessions: sessions((code) => code === recordReply.conflict) };
    }
    return { ok: true };
  }

  /**
   * Marks compactions published once their decisions are durably on the markers topic, one round trip.
   * Returns the sessions it could not mark (gone or of another epoch): their redelivery re-publishes.
   */
  async confirm(
    epoch: string,
    sessions: readonly (SessionRef & { readonly compactionIds: readonly string[] })[],
  ): Promise<SessionRef[]> {
    const pending = sessions.filter((s) => s.compactionIds.length > 0);
    if (pending.length === 0) return [];
    const pipeline = batchOf(this.#redis);
    for (const ref of pending) {
      void pipeline.validatorConfirm(
        this.#frameKey(ref),
        this.#decidedKey(ref),
        epoch,
        publishedJson,
        ...ref.compactionIds,
      );
    }
    const codes = (await execAll(pipeline)) as number[];
    return pending
      .filter((_, i) => codes[i] === confirmReply.notThisEpoch)
      .map(({ tenantId, sessionId }) => ({ tenantId, sessionId }));
  }

  /**
   * Writes sessions rebuilt from the markers topic after their frames expired, each only if it is
   * still absent (another validator may have restored it first; either way the next load finds it).
   * One round trip.
   */
  async restoreExpired(epoch: string, sessions: readonly RestoredSession[]): Promise<void> {
    if (sessions.length === 0) return;
    const pipeline = batchOf(this.#redis);
    for (const session of sessions) {
      void pipeline.validatorRecord(
        this.#frameKey(session),
        this.#decidedKey(session),
        this.#seenKey(session),
        epoch,
        0,
        '',
        JSON.stringify(session.state),
        this.#retentionMs,
        ...session.published.flatMap((id) => [id, publishedJson]),
      );
    }
    await execAll(pipeline);
  }

  /**
   * Writes rebuilt sessions under a new epoch, then publishes the epoch (last, so that nobody decides
   * on a half-rebuilt store). Pipelined in chunks.
   */
  async restore(epoch: string, sessions: readonly RestoredSession[]): Promise<void> {
    const chunk = 500;
    for (let start = 0; start < sessions.length; start += chunk) {
      const pipeline = batchOf(this.#redis);
      for (const session of sessions.slice(start, start + chunk)) {
        pipeline.hset(this.#frameKey(session), {
          v: 1,
          e: epoch,
          s: JSON.stringify(session.state),
        });
        if (session.published.length > 0) {
          pipeline.hset(
            this.#decidedKey(session),
            Object.fromEntries(session.published.map((id) => [id, publishedJson])),
          );
        }
        if (this.#retentionMs > 0) {
          // As a write would: restored, a session idle past the retention still expires.
          pipeline.pexpire(this.#frameKey(session), this.#retentionMs);
          pipeline.pexpire(this.#decidedKey(session), this.#retentionMs);
          pipeline.set(this.#seenKey(session), '1');
        }
      }
      await execAll(pipeline);
    }
    await this.lifecycle.setEpoch(epoch);
  }
}

/** The map key of a session in a load: `tenant/session`, as the contract's sessionKey. */
export function sessionKeyOf(ref: SessionRef): string {
  return sessionKey(ref.tenantId, ref.sessionId);
}
