import { sessionKey, type TurnEvent } from '@tidemark/core';
import type { Redis } from 'ioredis';
import { emptyWindow, type Compacted, type SessionWindow } from './window.js';

// The compactor's durable state in Redis, under its own namespace (generation + policy), so that the
// process holds nothing between batches: memory stays flat however many sessions are open, and a
// SIGKILL loses nothing. Per session, under the session's hash tag (one Cluster slot):
//
//   <prefix>cmp:<ns>:epoch                   string  set once the namespace exists; absent = lost (Redis
//                                                    flushed) or new: windows are rebuilt from turns.l0
//   <prefix>cmp:<ns>:{tenant/session}:win    string  the SessionWindow as JSON (positions, nodes, priors)
//   <prefix>cmp:<ns>:{tenant/session}:turns  hash    seq -> TurnEvent JSON, for the window's turns only
//   <prefix>cmp:<ns>:{tenant/session}:seeds  hash    compactionId -> Compacted JSON, until the validator
//                                                    decided the node (a repair is built from it)
//
// Write order per batch (see the README): seeds, then the compactions topic, then windows. A crash
// between any two redoes the batch, which recomputes the same bytes under the same ids.

export interface SessionRef {
  readonly tenantId: string;
  readonly sessionId: string;
}

export interface WindowUpdate {
  readonly window: SessionWindow;
  /** Accepted turns of this batch still uncompacted. */
  readonly added: readonly TurnEvent[];
  /** Seqs compacted in this batch whose turns were stored by an earlier one. */
  readonly dropped: readonly number[];
}

export class CompactorStore {
  readonly #redis: Redis;
  readonly #base: string;

  constructor(redis: Redis, options: { readonly prefix: string; readonly namespace: string }) {
    this.#redis = redis;
    this.#base = `${options.prefix}cmp:${options.namespace}:`;
  }

  #session(ref: SessionRef): string {
    return `${this.#base}{${sessionKey(ref.tenantId, ref.sessionId)}}:`;
  }

  /** Whether the namespace exists; false after a Redis flush (or before the first start). */
  async hasEpoch(): Promise<boolean> {
    return (await this.#redis.exists(`${this.#base}epoch`)) === 1;
  }

  async setEpoch(epoch: string): Promise<void> {
    await this.#redis.set(`${this.#base}epoch`, epoch);
  }

  /** The sessions' windows, in one round trip, together with whether the namespace still exists. */
  async loadWindows(refs: readonly SessionRef[]): Promise<{ epoch: boolean; windows: SessionWindow[] }> {
    const pipeline = this.#redis.pipeline();
    pipeline.exists(`${this.#base}epoch`);
    for (const ref of refs) pipeline.get(`${this.#session(ref)}win`);
    const results = unwrap(await pipeline.exec());
    const windows = refs.map((ref, index) => {
      const raw = results[index + 1] as string | null;
      if (raw === null) return emptyWindow(ref.tenantId, ref.sessionId);
      const window = JSON.parse(raw) as Omit<SessionWindow, 'renditions'> & Partial<SessionWindow>;
      // A window written before renditions existed reads as having none.
      return { ...window, renditions: window.renditions ?? {} };
    });
    return { epoch: results[0] === 1, windows };
  }

  /** A session's stored turns with these seqs, in the order asked; a missing one is an error. */
  async loadTurns(ref: SessionRef, seqs: readonly number[]): Promise<TurnEvent[]> {
    if (seqs.length === 0) return [];
    const raw = await this.#redis.hmget(`${this.#session(ref)}turns`, ...seqs.map(String));
    return raw.map((value, index) => {
      if (value === null) {
        throw new Error(`turn ${ref.tenantId}/${ref.sessionId}#${seqs[index]} is not in the window store`);
      }
      return JSON.parse(value) as TurnEvent;
    });
  }

  /** Seeds for repairs: written before their nodes are published, so a decision never misses one. */
  async saveSeeds(seeds: readonly Compacted[]): Promise<void> {
    if (seeds.length === 0) return;
    const pipeline = this.#redis.pipeline();
    for (const seed of seeds) {
      pipeline.hset(`${this.#session(seed.node)}seeds`, seed.node.compactionId, JSON.stringify(seed));
    }
    unwrap(await pipeline.exec());
  }

  async loadSeeds(
    wanted: readonly (SessionRef & { readonly compactionId: string })[],
  ): Promise<(Compacted | null)[]> {
    if (wanted.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const w of wanted) pipeline.hget(`${this.#session(w)}seeds`, w.compactionId);
    return unwrap(await pipeline.exec()).map((raw) =>
      raw === null ? null : (JSON.parse(raw as string) as Compacted),
    );
  }

  async dropSeeds(decided: readonly (SessionRef & { readonly compactionId: string })[]): Promise<void> {
    if (decided.length === 0) return;
    const pipeline = this.#redis.pipeline();
    for (const d of decided) pipeline.hdel(`${this.#session(d)}seeds`, d.compactionId);
    unwrap(await pipeline.exec());
  }

  /**
   * The batch's windows, in one round trip, after its compactions are durably published. Per session the
   * order is what makes a crash between any two commands harmless: new turns first (an old window
   * ignores them), then the window, then the compacted turns (a leftover is never read).
   */
  async commit(updates: readonly WindowUpdate[]): Promise<void> {
    if (updates.length === 0) return;
    const pipeline = this.#redis.pipeline();
    for (const { window, added, dropped } of updates) {
      const key = this.#session(window);
      if (added.length > 0) {
        pipeline.hset(`${key}turns`, ...added.flatMap((turn) => [String(turn.seq), JSON.stringify(turn)]));
      }
      pipeline.set(`${key}win`, JSON.stringify(window));
      if (dropped.length > 0) pipeline.hdel(`${key}turns`, ...dropped.map(String));
    }
    unwrap(await pipeline.exec());
  }
}

function unwrap(results: [Error | null, unknown][] | null): unknown[] {
  if (results === null) throw new Error('the Redis transaction was aborted');
  return results.map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}
