import type { SessionHistory } from '@tidemark/contract';
import { sessionKey, type Compaction, type MarkerDecision, type RegressionDetected } from '@tidemark/core';
import type { ResumeClient, SessionLog, TurnReader } from './client.js';
import type { StatusRefusal } from './outcomes.js';
import {
  assembleSessionView,
  maxViewTurns,
  turnRowOf,
  type SessionView,
  type TurnRow,
} from './session-view.js';

// Reads what the session page shows: the status the resume client answers (plan, frame, resume mode),
// the session's records of the compactions, markers and regressions topics (SessionHistory, one partition each), and
// its newest turns from turns.l0 (the L0 reader, from the position the projection keeps for a seq).
// The page polls every few seconds, so what was read is kept per session and only what is new is read
// again: the topics from the next offset, the turns from the next seq (records and turns never change
// once written). A bounded number of sessions is kept, least recently viewed dropped first.

export interface SessionViewDeps {
  readonly status: ResumeClient['status'];
  readonly history: Pick<SessionHistory, 'read'>;
  readonly log: Pick<SessionLog, 'l0Position'>;
  readonly turns: Pick<TurnReader, 'read'>;
  /** The turns.l0 topic name (with the deployment's prefix). */
  readonly turnsTopic: string;
  /** Sessions whose records are kept between polls (default 32). */
  readonly cachedSessions?: number;
}

export type ViewOutcome =
  | { readonly ok: true; readonly view: SessionView }
  | { readonly ok: false; readonly code: StatusRefusal; readonly message: string };

interface TopicTail<E> {
  partition: number | undefined;
  /** The next offset to read from (undefined: the partition's log start). */
  next: number | undefined;
  records: { offset: number; value: E }[];
}

interface SessionCache {
  readonly markers: TopicTail<MarkerDecision>;
  readonly compactions: TopicTail<Compaction>;
  readonly regressions: TopicTail<RegressionDetected>;
  /** The listed turns, contiguous, in seq order. */
  turns: TurnRow[];
  /** One read at a time per session: polls of one session queue behind each other. */
  queue: Promise<unknown>;
}

const emptyTail = <E>(): TopicTail<E> => ({ partition: undefined, next: undefined, records: [] });

export function createSessionViewReader(deps: SessionViewDeps) {
  const capacity = deps.cachedSessions ?? 32;
  const sessions = new Map<string, SessionCache>();

  const cacheOf = (key: string): SessionCache => {
    let cache = sessions.get(key);
    if (cache === undefined) {
      cache = {
        markers: emptyTail(),
        compactions: emptyTail(),
        regressions: emptyTail(),
        turns: [],
        queue: Promise.resolve(),
      };
      while (sessions.size >= capacity) sessions.delete(sessions.keys().next().value!);
    } else {
      sessions.delete(key);
    }
    sessions.set(key, cache);
    return cache;
  };

  // A topic's records of the session past what was read before (the history reads one partition).
  const readTail = async <E>(
    tail: TopicTail<E>,
    read: (range: { partition?: number; from?: number }) => Promise<{
      readonly partition: number;
      readonly records: readonly { readonly raw: { readonly offset: number }; readonly value: E }[];
      readonly end: number;
    }>,
  ): Promise<void> => {
    const found = await read({
      ...(tail.partition === undefined ? {} : { partition: tail.partition }),
      ...(tail.next === undefined ? {} : { from: tail.next }),
    });
    tail.partition = found.partition;
    for (const { raw, value } of found.records) {
      if (tail.next !== undefined && raw.offset < tail.next) continue;
      tail.records.push({ offset: raw.offset, value });
    }
    // On from where this read stopped, records of the session or not: a session with none yet (no
    // regression, say) is not read from the partition's start at every poll.
    tail.next = Math.max(tail.next ?? 0, found.end);
  };

  // The newest maxViewTurns applied turns: those listed already are kept, the ones after them read.
  const readTurns = async (
    ref: { tenantId: string; sessionId: string },
    cache: SessionCache,
    appliedSeq: number,
  ): Promise<void> => {
    const fromSeq = Math.max(1, appliedSeq - maxViewTurns + 1);
    const kept = cache.turns.filter((t) => t.seq >= fromSeq && t.seq <= appliedSeq);
    // Kept turns start the window, or none are kept (the listing is always contiguous from fromSeq).
    cache.turns = kept[0]?.seq === fromSeq ? kept : [];
    const start = (cache.turns.at(-1)?.seq ?? fromSeq - 1) + 1;
    if (start > appliedSeq) return;
    // From the first turn wanted to the last, both where the projection placed them (as a resume reads
    // its raw tail: the partition's later traffic is not fetched).
    const [position, last] = await Promise.all([
      deps.log.l0Position(ref.tenantId, ref.sessionId, start),
      deps.log.l0Position(ref.tenantId, ref.sessionId, appliedSeq),
    ]);
    if (position === null) return;
    const turns = await deps.turns.read({
      topic: deps.turnsTopic,
      partition: position.partition,
      fromOffset: position.offset,
      toOffset: last?.partition === position.partition ? last.offset : Number.MAX_SAFE_INTEGER,
      key: sessionKey(ref.tenantId, ref.sessionId),
      fromSeq: start,
      toSeq: appliedSeq,
    });
    cache.turns.push(...turns.map(turnRowOf));
  };

  const read = async (tenantId: string, sessionId: string): Promise<ViewOutcome> => {
    const ref = { tenantId, sessionId };
    const status = await deps.status(tenantId, sessionId);
    if (!status.ok) return status;
    const cache = cacheOf(sessionKey(tenantId, sessionId));
    const update = cache.queue.then(async () => {
      await Promise.all([
        readTail(cache.markers, (range) => deps.history.read('markers', ref, range)),
        readTail(cache.compactions, (range) => deps.history.read('compactions', ref, range)),
        readTail(cache.regressions, (range) => deps.history.read('regressions', ref, range)),
        readTurns(ref, cache, status.status.appliedSeq),
      ]);
      return assembleSessionView({
        status: status.status,
        compactions: cache.compactions.records.map((r) => r.value),
        decisions: cache.markers.records.map((r) => ({ offset: r.offset, decision: r.value })),
        turns: cache.turns,
        regressions: cache.regressions.records.map((r) => r.value),
      });
    });
    // A failed read leaves the cache as it was (each part moves only past what it read), and the next
    // poll queues behind neither it nor its error.
    cache.queue = update.catch(() => undefined);
    return { ok: true, view: await update };
  };

  return {
    /** The picture of a session now; a refusal (no such session, the store rebuilding) as the status gives it. */
    view: read,
  };
}

export type SessionViewReader = ReturnType<typeof createSessionViewReader>;
