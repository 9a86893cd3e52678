import { sessionKey, type RegressionWatch, type WatchedStep } from '@tidemark/core';
import type { Redis } from 'ioredis';
import { sessionStoreKey, type SessionRef } from './keys.js';
import { execAll } from './replies.js';

// The regression watch a resume leaves behind (written by the resume service, read by the materializer):
// per session, the boundary its summary covered, the last turn its context held, and the steps ruled out
// before the boundary, by signature. Unlike the other stores it is not rebuilt from the topics: it
// records that a resume was served (a request, not an event). A lost watch only means no regression is
// told until the session's next resume records a new one.
//
// Key (under the prefix, hash-tagged by session):
//   watch:{tenant/session}   hash: `r` -> RegressionWatch JSON, `s:<signature>` -> WatchedStep JSON;
//                            expires a retention after the last resume that wrote it

/** A session's watch as the materializer reads it for the signatures of a batch's new items. */
export interface WatchMatch {
  readonly watch: RegressionWatch;
  /** The watched steps among the asked signatures. */
  readonly steps: ReadonlyMap<string, WatchedStep>;
}

export class WatchStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #retentionMs: number;

  constructor(redis: Redis, options: { prefix: string; retentionMs?: number }) {
    this.#redis = redis;
    this.#prefix = options.prefix;
    this.#retentionMs = options.retentionMs ?? 7 * 24 * 60 * 60 * 1000;
  }

  /** Replaces the session's watch (no steps: nothing to watch, the key is removed). One round trip. */
  async put(ref: SessionRef, watch: RegressionWatch, steps: readonly WatchedStep[]): Promise<void> {
    const key = sessionStoreKey(this.#prefix, 'watch', ref);
    const tx = this.#redis.multi().del(key);
    if (steps.length > 0) {
      const fields = steps.flatMap((step) => [`s:${step.signature}`, JSON.stringify(step)]);
      tx.hset(key, 'r', JSON.stringify(watch), ...fields).pexpire(key, this.#retentionMs);
    }
    await execAll(tx);
  }

  /**
   * The watches of many sessions, each with the watched steps among its signatures: one round trip for
   * the batch. Keyed by core sessionKey; a session with no watch (or none of the signatures) is absent.
   */
  async match(
    queries: readonly { readonly ref: SessionRef; readonly signatures: readonly string[] }[],
  ): Promise<Map<string, WatchMatch>> {
    const found = new Map<string, WatchMatch>();
    if (queries.length === 0) return found;
    const pipeline = this.#redis.pipeline();
    for (const { ref, signatures } of queries) {
      pipeline.hmget(sessionStoreKey(this.#prefix, 'watch', ref), 'r', ...signatures.map((s) => `s:${s}`));
    }
    const replies = (await execAll(pipeline)) as (string | null)[][];
    queries.forEach(({ ref, signatures }, index) => {
      const [watch, ...steps] = replies[index]!;
      if (watch === null || watch === undefined) return;
      const known = new Map<string, WatchedStep>();
      steps.forEach((step, i) => {
        if (step !== null) known.set(signatures[i]!, JSON.parse(step) as WatchedStep);
      });
      if (known.size === 0) return;
      const parsed = JSON.parse(watch) as RegressionWatch;
      found.set(sessionKey(ref.tenantId, ref.sessionId), { watch: parsed, steps: known });
    });
    return found;
  }
}
