import { hash } from 'node:crypto';
import type { TurnEvent } from '@tidemark/core';
import type { Result } from 'ioredis';
import { luaScript, sessionStoreKey, windowsLayout, type SessionRef } from './keys.js';
import { StateError } from './errors.js';
import { execAll } from './replies.js';
import { batchOf, type RedisClient } from './redis-client.js';
import { StoreLifecycle } from './store-lifecycle.js';

// The compactor's durable state in Redis, under its own namespace (generation + policy), so that the
// process holds nothing between batches: memory stays flat however many sessions are open, and a
// SIGKILL loses nothing. Per session, under the session's hash tag (one Cluster slot):
//
//   <prefix>cmp:<ns>:epoch:5           string  set once the namespace exists; absent = lost (Redis flushed)
//                                              or new: windows are rebuilt from turns.l0
//   <prefix>cmp:<ns>:{tenant/session}  hash    w -> the compactor's window as JSON (opaque here)
//                                              t:<seq> -> TurnEvent JSON, for the window's turns only
//                                              n:<id> -> node JSON (opaque here), for the nodes it names
//
// One key per session: a batch's write is one HSET (and one HDEL, one PEXPIRE) in one script call. The
// window is what every batch reads and writes, so it is kept small: it names its nodes, whose bodies
// (kilobytes each) are written once, when made, and read only when a summary needs them.
//
// Write order per batch (see the compactor's README): the compactions topic, then windows. A crash
// between the two redoes the batch, which recomputes the same bytes under the same ids.
//
// Every commit sets the session's hash to expire a retention after it: the
// window of a session idle that long is gone, and the compactor rebuilds it from the session's turns on
// turns.l0 when the session is next seen (a turn past seq 1 with no window), so Redis holds the sessions
// in use, not every session ever compacted.
//
// A window is written only over the window its batch loaded (lua/windows-commit.lua): a batch in flight
// across a Redis loss or a rebuild writes nothing, and is redone from what the store holds then. A
// rebuild (lifecycle.reset) deletes every key of the namespace before it sets the new epoch, so nothing
// an older epoch wrote survives into the new one. A window naming a turn the store does not hold is lost
// state (WindowsLostError): the namespace is rebuilt from turns.l0, never retried as it is.

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tidemarkWindowsCommit(session: string, ...args: (string | number)[]): Result<number, Context>;
  }
}

/** The replies of lua/windows-commit.lua, as its header lists them. */
const commitReply = { written: 1, moved: -1 } as const;

export interface WindowUpdate<W extends SessionRef> {
  readonly window: W;
  /** The version of the window the batch started from (LoadedWindows.versions); the write's fence. */
  readonly loaded: string;
  /** Accepted turns of this batch still uncompacted. */
  readonly added: readonly TurnEvent[];
  /** Seqs compacted in this batch whose turns were stored by an earlier one. */
  readonly dropped: readonly number[];
  /** Nodes the window names from this batch on (id, body), and ids it no longer names. */
  readonly nodes?: {
    readonly added: readonly (readonly [id: string, body: unknown])[];
    readonly dropped: readonly string[];
  };
}

export interface LoadedWindows<W> {
  /** Whether the namespace still exists (false: Redis lost it; rebuild). */
  readonly epoch: boolean;
  /** Per session asked for, its stored window, or null for none. */
  readonly windows: (W | null)[];
  /** Per window, the version it was stored as ("" for none): what commit writes over. */
  readonly versions: string[];
}

/** Some windows were rewritten (or lost) since their batch loaded them: the batch is redone. */
export class WindowMovedError extends StateError {
  override readonly name: string = 'WindowMovedError';
  constructor(readonly sessions: readonly string[]) {
    super(
      'window_moved',
      `the window of ${sessions.join(', ')} changed in Redis while the batch ran (Redis lost or rebuilt); the batch will be redone`,
      { retriable: true },
    );
  }
}

/** Redis lost the compactor's state (the namespace, or a window's turns): the windows are rebuilt from L0. */
export class WindowsLostError extends StateError {
  override readonly name: string = 'WindowsLostError';
  constructor(readonly detail = 'the namespace epoch is gone (Redis flushed or restarted)') {
    super(
      'windows_lost',
      `the compactor state in Redis was lost (${detail}); windows must be rebuilt from turns.l0`,
      { retriable: true },
    );
  }
}

/** The fields of a session's hash: its window, a turn of it, a node it names. */
const windowField = 'w';
const turnField = (seq: number | string): string => `t:${seq}`;
const nodeField = (id: string): string => `n:${id}`;

/** The version a stored window JSON is known by: its SHA-1, as the script computes it. */
const versionOf = (raw: string | null): string => (raw === null ? '' : hash('sha1', raw, 'hex'));

/** The compactor's windows of one namespace; `W` is the compactor's window, stored as JSON. */
export class WindowStore<W extends SessionRef> {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #store: string;
  readonly #retentionMs: number;
  /** Epoch and clear: a rebuild is `lifecycle.reset(newEpoch)`, then a replay of turns.l0. */
  readonly lifecycle: StoreLifecycle;

  constructor(
    redis: RedisClient,
    options: {
      readonly prefix: string;
      readonly namespace: string;
      /** How long an idle session's window is kept after its last write (0: forever); see windowOf's caller. */
      readonly retentionMs?: number;
    },
  ) {
    // defineCommand is idempotent per name on a connection; the service and replay may share one.
    redis.defineCommand('tidemarkWindowsCommit', { numberOfKeys: 1, lua: luaScript('windows-commit') });
    this.#redis = redis;
    this.#prefix = options.prefix;
    this.#store = `cmp:${options.namespace}`;
    this.#retentionMs = options.retentionMs ?? 0;
    this.lifecycle = new StoreLifecycle(redis, windowsLayout(options.prefix, options.namespace));
  }

  #session(ref: SessionRef): string {
    return sessionStoreKey(this.#prefix, this.#store, ref);
  }

  /** The sessions' windows, in one round trip, together with whether the namespace still exists. */
  async loadWindows(refs: readonly SessionRef[]): Promise<LoadedWindows<W>> {
    const pipeline = batchOf(this.#redis);
    pipeline.exists(this.lifecycle.layout.epochKey);
    for (const ref of refs) pipeline.hget(this.#session(ref), windowField);
    const results = await execAll(pipeline);
    const raws = refs.map((_, index) => results[index + 1] as string | null);
    return {
      epoch: results[0] === 1,
      windows: raws.map((raw) => (raw === null ? null : (JSON.parse(raw) as W))),
      versions: raws.map(versionOf),
    };
  }

  /**
   * A session's stored turns with these seqs, in the order asked. A missing one means the window outlived
   * its turns (state lost some other way than a flush): WindowsLostError, and the namespace is rebuilt.
   */
  async loadTurns(ref: SessionRef, seqs: readonly number[]): Promise<TurnEvent[]> {
    if (seqs.length === 0) return [];
    const raw = await this.#redis.hmget(this.#session(ref), ...seqs.map(turnField));
    return raw.map((value, index) => {
      if (value === null) {
        throw new WindowsLostError(
          `turn ${ref.tenantId}/${ref.sessionId}#${seqs[index]} of its window is not in the store`,
        );
      }
      return JSON.parse(value) as TurnEvent;
    });
  }

  /**
   * The bodies of a session's nodes with these ids, in the order asked. A missing one means the window
   * outlived its nodes: WindowsLostError, as for turns.
   */
  async loadNodes<N>(ref: SessionRef, ids: readonly string[]): Promise<N[]> {
    if (ids.length === 0) return [];
    const raw = await this.#redis.hmget(this.#session(ref), ...ids.map(nodeField));
    return raw.map((value, index) => {
      if (value === null) {
        throw new WindowsLostError(
          `node ${ids[index]} of the window of ${ref.tenantId}/${ref.sessionId} is not in the store`,
        );
      }
      return JSON.parse(value) as N;
    });
  }

  /**
   * The batch's windows, in one round trip, after its compactions are durably published; each written
   * only over the window its batch loaded. Within a session's script the order is that of a crash-safe
   * sequence anyway: new turns, then the window, then the compacted turns. Throws WindowMovedError
   * (nothing of those sessions written) when another epoch or writer got there first.
   */
  async commit(updates: readonly WindowUpdate<W>[]): Promise<void> {
    if (updates.length === 0) return;
    const pipeline = batchOf(this.#redis);
    for (const { window, loaded, added, dropped, nodes } of updates) {
      const sets = [
        windowField,
        JSON.stringify(window),
        ...added.flatMap((turn) => [turnField(turn.seq), JSON.stringify(turn)]),
        ...(nodes?.added ?? []).flatMap(([id, body]) => [nodeField(id), JSON.stringify(body)]),
      ];
      void pipeline.tidemarkWindowsCommit(
        this.#session(window),
        loaded,
        this.#retentionMs,
        sets.length / 2,
        ...sets,
        ...dropped.map(turnField),
        ...(nodes?.dropped ?? []).map(nodeField),
      );
    }
    const moved = (await execAll(pipeline))
      .map((code, index) => (code === commitReply.written ? null : updates[index]!.window))
      .filter((w) => w !== null)
      .map((w) => `${w.tenantId}/${w.sessionId}`);
    if (moved.length > 0) throw new WindowMovedError(moved);
  }
}
