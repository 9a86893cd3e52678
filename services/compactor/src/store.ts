import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { TurnEvent } from '@tidemark/core';
import { escapeGlob, sessionTag } from '@tidemark/state';
import type { Redis } from 'ioredis';
import { emptyWindow, type SessionWindow } from './window.js';

// The compactor's durable state in Redis, under its own namespace (generation + policy), so that the
// process holds nothing between batches: memory stays flat however many sessions are open, and a
// SIGKILL loses nothing. Per session, under the session's hash tag (one Cluster slot):
//
//   <prefix>cmp:<ns>:epoch                   string  set once the namespace exists; absent = lost (Redis
//                                                    flushed) or new: windows are rebuilt from turns.l0
//   <prefix>cmp:<ns>:{tenant/session}:win    string  the SessionWindow as JSON (positions, nodes, priors)
//   <prefix>cmp:<ns>:{tenant/session}:turns  hash    seq -> TurnEvent JSON, for the window's turns only
//
// Write order per batch (see the README): the compactions topic, then windows. A crash between the two
// redoes the batch, which recomputes the same bytes under the same ids.
//
// A window is written only over the window its batch loaded (lua/compactor-commit-window.lua): a batch
// in flight across a Redis loss or a rebuild writes nothing, and is redone from what the store holds
// then. A rebuild deletes every key of the namespace before it sets the new epoch, so nothing an older
// epoch wrote survives into the new one. A window naming a turn the store does not hold is lost state
// (WindowsLostError): the namespace is rebuilt from turns.l0, never retried as it is.

export interface SessionRef {
  readonly tenantId: string;
  readonly sessionId: string;
}

export interface WindowUpdate {
  readonly window: SessionWindow;
  /** The version of the window the batch started from (LoadedWindows.versions); the write's fence. */
  readonly loaded: string;
  /** Accepted turns of this batch still uncompacted. */
  readonly added: readonly TurnEvent[];
  /** Seqs compacted in this batch whose turns were stored by an earlier one. */
  readonly dropped: readonly number[];
}

export interface LoadedWindows {
  /** Whether the namespace still exists (false: Redis lost it; rebuild). */
  readonly epoch: boolean;
  readonly windows: SessionWindow[];
  /** Per window, the version it was stored as ("" for none): what commit writes over. */
  readonly versions: string[];
}

/** Some windows were rewritten (or lost) since their batch loaded them: the batch is redone. */
export class WindowMovedError extends Error {
  override readonly name = 'WindowMovedError';
  constructor(readonly sessions: readonly string[]) {
    super(
      `the window of ${sessions.join(', ')} changed in Redis while the batch ran (Redis lost or rebuilt); the batch will be redone`,
    );
  }
}

/** Redis lost the compactor's state (the namespace, or a window's turns): the windows are rebuilt from L0. */
export class WindowsLostError extends Error {
  override readonly name = 'WindowsLostError';
  constructor(readonly detail = 'the namespace epoch is gone (Redis flushed or restarted)') {
    super(`the compactor state in Redis was lost (${detail}); windows must be rebuilt from turns.l0`);
  }
}

type CommitWindow = (win: string, turns: string, ...args: (string | number)[]) => Promise<number>;

const commitWindowLua = readFileSync(new URL('../lua/compactor-commit-window.lua', import.meta.url), 'utf8');

/** The version a stored window JSON is known by: its SHA-1, as the script computes it. */
const versionOf = (raw: string | null): string =>
  raw === null ? '' : createHash('sha1').update(raw, 'utf8').digest('hex');

export class CompactorStore {
  readonly #redis: Redis & { compactorCommitWindow: CommitWindow };
  readonly #base: string;

  constructor(redis: Redis, options: { readonly prefix: string; readonly namespace: string }) {
    // defineCommand is idempotent per name on a connection; the service and replay may share one.
    redis.defineCommand('compactorCommitWindow', { numberOfKeys: 2, lua: commitWindowLua });
    this.#redis = redis as Redis & { compactorCommitWindow: CommitWindow };
    this.#base = `${options.prefix}cmp:${options.namespace}:`;
  }

  #session(ref: SessionRef): string {
    return `${this.#base}${sessionTag(ref)}:`;
  }

  /** Whether the namespace exists; false after a Redis flush (or before the first start). */
  async hasEpoch(): Promise<boolean> {
    return (await this.#redis.exists(`${this.#base}epoch`)) === 1;
  }

  async setEpoch(epoch: string): Promise<void> {
    await this.#redis.set(`${this.#base}epoch`, epoch);
  }

  /**
   * Starts the namespace over under a new epoch: the epoch is dropped first (a batch still on the old one
   * finds it gone), then every window and turn is deleted, then the new epoch is set. Returns the
   * number of keys deleted.
   */
  async reset(epoch: string): Promise<number> {
    await this.#redis.del(`${this.#base}epoch`);
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(
        cursor,
        'MATCH',
        `${escapeGlob(this.#base)}*`,
        'COUNT',
        1000,
      );
      cursor = next;
      if (keys.length > 0) deleted += await this.#redis.unlink(...keys);
    } while (cursor !== '0');
    await this.setEpoch(epoch);
    return deleted;
  }

  /** The sessions' windows, in one round trip, together with whether the namespace still exists. */
  async loadWindows(refs: readonly SessionRef[]): Promise<LoadedWindows> {
    const pipeline = this.#redis.pipeline();
    pipeline.exists(`${this.#base}epoch`);
    for (const ref of refs) pipeline.get(`${this.#session(ref)}win`);
    const results = unwrap(await pipeline.exec());
    const raws = refs.map((_, index) => results[index + 1] as string | null);
    const windows = refs.map((ref, index) => {
      const raw = raws[index]!;
      if (raw === null) return emptyWindow(ref.tenantId, ref.sessionId);
      const window = JSON.parse(raw) as Omit<SessionWindow, 'renditions'> & Partial<SessionWindow>;
      // A window written before renditions existed reads as having none.
      return { ...window, renditions: window.renditions ?? {} };
    });
    return { epoch: results[0] === 1, windows, versions: raws.map(versionOf) };
  }

  /**
   * A session's stored turns with these seqs, in the order asked. A missing one means the window outlived
   * its turns (state lost some other way than a flush): WindowsLostError, and the namespace is rebuilt.
   */
  async loadTurns(ref: SessionRef, seqs: readonly number[]): Promise<TurnEvent[]> {
    if (seqs.length === 0) return [];
    const raw = await this.#redis.hmget(`${this.#session(ref)}turns`, ...seqs.map(String));
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
   * The batch's windows, in one round trip, after its compactions are durably published; each written
   * only over the window its batch loaded. Within a session's script the order is that of a crash-safe
   * sequence anyway: new turns, then the window, then the compacted turns. Throws WindowMovedError
   * (nothing of those sessions written) when another epoch or writer got there first.
   */
  async commit(updates: readonly WindowUpdate[]): Promise<void> {
    if (updates.length === 0) return;
    const pipeline = this.#redis.pipeline() as ReturnType<Redis['pipeline']> & {
      compactorCommitWindow: (...args: (string | number)[]) => unknown;
    };
    for (const { window, loaded, added, dropped } of updates) {
      const key = this.#session(window);
      pipeline.compactorCommitWindow(
        `${key}win`,
        `${key}turns`,
        loaded,
        JSON.stringify(window),
        added.length,
        ...added.flatMap((turn) => [String(turn.seq), JSON.stringify(turn)]),
        ...dropped.map(String),
      );
    }
    const moved = unwrap(await pipeline.exec())
      .map((code, index) => (code === 1 ? null : updates[index]!.window))
      .filter((w) => w !== null)
      .map((w) => `${w.tenantId}/${w.sessionId}`);
    if (moved.length > 0) throw new WindowMovedError(moved);
  }
}

function unwrap(results: [Error | null, unknown][] | null): unknown[] {
  if (results === null) throw new Error('the Redis transaction was aborted');
  return results.map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}
