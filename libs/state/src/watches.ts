import { sessionKey, type RegressionWatch, type WatchedStep } from '@tidemark/core';
import { batchOf, type RedisClient } from './redis-client.js';
import { sessionStoreKey, type SessionRef } from './keys.js';
import type { AlongsideRead } from './projection.js';
import { execAll } from './replies.js';

// The regression watch a resume leaves behind (written by the resume service, read by the materializer):
// per session, the boundary its summary covered, the last turn its context held, and the steps ruled out
// before the boundary, by signature. Unlike the other stores it is not rebuilt from the topics: it
// records that a resume was served (a request, not an event). A lost watch only means no regression is
// told until the session's next resume records a new one.
//
// Key (under the prefix, hash-tagged by session):
//   watch:{tenant/session}   hash: `r` -> RegressionWatch JSON, `s:<signature>` -> WatchedStep JSON;
//                            expires a retention after the last resume that wrote it (0: kept)

export class WatchStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #retentionMs: number;

  /** retentionMs: the deployment's STATE_RETENTION_MS, as the other stores take it (0, the default: kept). */
  constructor(redis: RedisClient, options: { prefix: string; retentionMs?: number }) {
    this.#redis = redis;
    this.#prefix = options.prefix;
    this.#retentionMs = options.retentionMs ?? 0;
  }

  /** Replaces the session's watch (no steps: nothing to watch, the key is removed). One round trip. */
  async put(ref: SessionRef, watch: RegressionWatch, steps: readonly WatchedStep[]): Promise<void> {
    const key = sessionStoreKey(this.#prefix, 'watch', ref);
    const tx = this.#redis.multi().del(key);
    if (steps.length > 0) {
      const fields = steps.flatMap((step) => [`s:${step.signature}`, JSON.stringify(step)]);
      tx.hset(key, 'r', JSON.stringify(watch), ...fields);
      // PEXPIRE 0 would delete the key at once: a retention of 0 keeps it.
      if (this.#retentionMs > 0) tx.pexpire(key, this.#retentionMs);
    }
    await execAll(tx);
  }

  /**
   * The watches of these sessions, as a read sent in another store's round trip (the projection's apply:
   * AlongsideRead): one field each, so a batch whose sessions nobody resumed costs next to nothing.
   * Keyed by core sessionKey; a session with no watch is absent.
   */
  watching(refs: readonly SessionRef[]): AlongsideRead<Map<string, RegressionWatch>> {
    return {
      queue: (pipeline) => {
        for (const ref of refs) pipeline.hget(sessionStoreKey(this.#prefix, 'watch', ref), 'r');
        return {
          replies: refs.length,
          read: (replies) => {
            const found = new Map<string, RegressionWatch>();
            refs.forEach((ref, i) => {
              const watch = replies[i] as string | null;
              if (watch !== null) {
                found.set(sessionKey(ref.tenantId, ref.sessionId), JSON.parse(watch) as RegressionWatch);
              }
            });
            return found;
          },
        };
      },
    };
  }

  /**
   * The watched steps among each session's signatures, in one round trip for the batch (only sessions
   * that have a watch are worth asking). Keyed by core sessionKey, then by signature.
   */
  async steps(queries: readonly WatchQuery[]): Promise<Map<string, Map<string, WatchedStep>>> {
    const found = new Map<string, Map<string, WatchedStep>>();
    if (queries.length === 0) return found;
    const pipeline = batchOf(this.#redis);
    for (const { ref, signatures } of queries) {
      pipeline.hmget(sessionStoreKey(this.#prefix, 'watch', ref), ...signatures.map((s) => `s:${s}`));
    }
    const replies = await execAll(pipeline);
    queries.forEach(({ ref, signatures }, index) => {
      const known = new Map<string, WatchedStep>();
      (replies[index] as (string | null)[]).forEach((step, i) => {
        if (step !== null) known.set(signatures[i]!, JSON.parse(step) as WatchedStep);
      });
      if (known.size > 0) found.set(sessionKey(ref.tenantId, ref.sessionId), known);
    });
    return found;
  }
}

/** A session and the signatures of the steps a batch opened in it. */
export interface WatchQuery {
  readonly ref: SessionRef;
  readonly signatures: readonly string[];
}
