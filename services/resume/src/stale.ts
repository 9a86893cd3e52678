import { sessionKey } from '@tidemark/core';
import type { Logger } from 'pino';

// "Stale is visible": when the compactor or the validator is stuck for a session, the resume API still
// answers with the context of an older node; this says so. A session is stale when a compaction is due
// and has not been decided within a bound:
//
//   decidedL1ToSeq  the end of the newest L1 span any decision names (the stored plan carries it)
//   dueSeq          decidedL1ToSeq + the session's l1EveryTurns: the compactor cuts its next L1 there at
//                   the latest (sooner under a token budget, so this never reports a session early)
//   due             the projection's watermark (appliedSeq) has reached dueSeq
//   stale           due, and the L0 turn at dueSeq was appended to turns.l0 more than STALE_AFTER_MS ago
//
// "Since when" is the append time of the turn at dueSeq: the Kafka timestamp of its turns.l0 record, the
// moment the compaction became possible (the compactor cuts from L0). It is read once per boundary and
// session (a Fetch at the offset the projection keeps for that seq) and only when the boundary is due
// and undecided, which is rare. Chosen over the alternatives because it is
// - deterministic: a fact of the log, the same for every instance, before and after a restart, and the
//   same whether the session is first asked about a second or an hour after it became due (the first
//   time this instance observed it due would differ per instance, reset on every restart and delay the
//   report by STALE_AFTER_MS each time);
// - about the pipeline, not the agent: TurnEvent.timestamp is the runtime's clock and is informational
//   (imported or replayed sessions carry their original times, and would read as overdue at once while
//   the compactor is still working through them).
// Only when turns.l0 cannot tell (no such record, no timestamp) does the first time this instance found
// the boundary due stand in for it.

/** Why the context served may be older than it should be. */
export interface Staleness {
  /** When the overdue compaction became due: the append time of the L0 turn at the due boundary (ISO 8601, UTC). */
  readonly since: string;
  readonly reason: 'compaction_overdue';
}

/** Where a session stands against its policy's L1 cadence. */
export interface CompactionDue {
  /** The session's L1 cadence (its policy: L1_EVERY_TURNS or its POLICY_OVERRIDES entry). */
  readonly l1EveryTurns: number;
  /** The end of the newest L1 span any decision names; 0 before the first. */
  readonly decidedL1ToSeq: number;
  /** The next L1 boundary: decidedL1ToSeq + l1EveryTurns. */
  readonly dueSeq: number;
  /** The projection has applied the turn at dueSeq: the compaction there is due. */
  readonly due: boolean;
}

export function compactionDue(
  decidedL1ToSeq: number,
  appliedSeq: number,
  l1EveryTurns: number,
): CompactionDue {
  const dueSeq = decidedL1ToSeq + l1EveryTurns;
  return { l1EveryTurns, decidedL1ToSeq, dueSeq, due: appliedSeq >= dueSeq };
}

/** Stale once the compaction has been due for longer than the bound. */
export function stalenessOf(dueSinceMs: number, nowMs: number, staleAfterMs: number): Staleness | null {
  if (nowMs - dueSinceMs <= staleAfterMs) return null;
  return { since: new Date(dueSinceMs).toISOString(), reason: 'compaction_overdue' };
}

export interface StaleTrackerOptions {
  readonly staleAfterMs: number;
  readonly logger?: Logger;
  readonly now?: () => number;
  /** Sessions remembered (least recently evaluated first out); default 10,000. */
  readonly capacity?: number;
  /** How recent an evaluation must be to count in staleSessions(); default 15 minutes. */
  readonly windowMs?: number;
}

interface Tracked {
  readonly ref: { readonly tenantId: string; readonly sessionId: string };
  readonly dueSeq: number;
  /** When this instance first found dueSeq due. */
  readonly firstDueMs: number;
  /** The append time of the turn at dueSeq, once known (or firstDueMs when turns.l0 cannot tell). */
  sinceMs: number | null;
  lookup: Promise<number | null> | null;
  stale: boolean;
  evaluatedMs: number;
}

const staleWindowMs = 15 * 60_000;

/**
 * The evaluations of one resume instance: per session (bounded), the due boundary, its append time
 * (looked up once), whether the last evaluation found the session stale and when. Logs one warning
 * when a session is first found stale at a boundary, not on every request.
 */
export class StaleTracker {
  readonly #options: StaleTrackerOptions;
  readonly #now: () => number;
  readonly #capacity: number;
  readonly #windowMs: number;
  readonly #sessions = new Map<string, Tracked>();

  constructor(options: StaleTrackerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#capacity = options.capacity ?? 10_000;
    this.#windowMs = options.windowMs ?? staleWindowMs;
  }

  /**
   * Whether the session is stale. `appendTime` is asked only when the boundary is due and its time is
   * not known yet (once per boundary when it answers); it answers null when turns.l0 cannot tell, and
   * a failure is retried at the next evaluation. Never rejects.
   */
  async evaluate(
    ref: { readonly tenantId: string; readonly sessionId: string },
    due: CompactionDue,
    appendTime: () => Promise<number | null>,
  ): Promise<Staleness | null> {
    const key = sessionKey(ref.tenantId, ref.sessionId);
    if (!due.due) {
      this.#sessions.delete(key);
      return null;
    }
    let tracked = this.#sessions.get(key);
    if (tracked === undefined || tracked.dueSeq !== due.dueSeq) {
      const now = this.#now();
      tracked = {
        ref: { tenantId: ref.tenantId, sessionId: ref.sessionId },
        dueSeq: due.dueSeq,
        firstDueMs: now,
        sinceMs: null,
        lookup: null,
        stale: false,
        evaluatedMs: now,
      };
    }
    this.#remember(key, tracked);
    if (tracked.sinceMs === null) {
      const entry = tracked;
      entry.lookup ??= appendTime()
        .then((at) => {
          entry.sinceMs = at ?? entry.firstDueMs;
          return entry.sinceMs;
        })
        .catch((error: unknown) => {
          this.#options.logger?.warn(
            { err: error, ...entry.ref, dueSeq: entry.dueSeq },
            'stale check: turns.l0 did not answer the due turn; using the time it was first seen due',
          );
          return null;
        })
        .finally(() => {
          entry.lookup = null;
        });
      await entry.lookup;
    }
    const now = this.#now();
    const stale = stalenessOf(tracked.sinceMs ?? tracked.firstDueMs, now, this.#options.staleAfterMs);
    if (stale !== null && !tracked.stale) {
      this.#options.logger?.warn(
        {
          ...tracked.ref,
          dueSeq: due.dueSeq,
          decidedL1ToSeq: due.decidedL1ToSeq,
          since: stale.since,
          staleAfterMs: this.#options.staleAfterMs,
        },
        'session stale: a due compaction has not been decided in time; resumes serve an older node',
      );
    }
    tracked.stale = stale !== null;
    tracked.evaluatedMs = now;
    return stale;
  }

  /** Sessions whose latest evaluation here, within the window, found them stale (the gauge). */
  staleSessions(): number {
    const since = this.#now() - this.#windowMs;
    let count = 0;
    for (const tracked of this.#sessions.values())
      if (tracked.stale && tracked.evaluatedMs >= since) count += 1;
    return count;
  }

  #remember(key: string, tracked: Tracked): void {
    this.#sessions.delete(key);
    this.#sessions.set(key, tracked);
    if (this.#sessions.size > this.#capacity) this.#sessions.delete(this.#sessions.keys().next().value!);
  }
}
