import { randomUUID } from 'node:crypto';
import { foldDecisions, isVerdict, type MarkerDecision } from '@tidemark/core';
import type { Bus, SessionHistory } from '@tidemark/contract';
import {
  sessionKeyOf,
  withRebuildLock,
  type FrameStore,
  type RestoredSession,
  type SessionRef,
} from '@tidemark/state';
import type { Logger } from '@tidemark/service';

// Rebuilding the frame store when Redis lost it (or on the very first start): the markers topic is the
// validator's own log, and every frame state is a fold of a session's decisions in log order (core's
// session decider, `evolve`). One validator rebuilds under a lock; the others wait for the new epoch.
// While the store has no epoch nobody decides: a batch that finds it missing waits here, and its
// offsets are not committed until its decisions are published.

export interface RebuildDeps {
  readonly bus: Bus;
  readonly frames: FrameStore;
  readonly logger: Logger;
  readonly lockMs: number;
  readonly onRebuilt?: (sessions: number) => void;
}

/** Replays the whole markers topic (up to its end when the rebuild starts) into per-session state. */
export function restoredSessions(decisions: readonly MarkerDecision[]): RestoredSession[] {
  const bySession = new Map<string, MarkerDecision[]>();
  for (const decision of decisions) {
    const key = sessionKeyOf(decision);
    const list = bySession.get(key);
    if (list === undefined) bySession.set(key, [decision]);
    else list.push(decision);
  }
  return [...bySession.values()].map((list) => {
    const { tenantId, sessionId } = list[0]!;
    return {
      tenantId,
      sessionId,
      state: foldDecisions(list),
      published: [...new Set(list.filter(isVerdict).map((d) => d.compactionId))],
    };
  });
}

/**
 * Rebuilds the frames of sessions that expired (idle past the retention) from their decisions on the
 * markers topic: the same fold as a rebuild of the whole store, over one session's partition each.
 */
export async function restoreExpired(
  deps: { readonly frames: Pick<FrameStore, 'restoreExpired'>; readonly history: SessionHistory },
  epoch: string,
  sessions: readonly SessionRef[],
): Promise<void> {
  const decisions = await Promise.all(
    sessions.map(async (ref) => (await deps.history.read('markers', ref)).records.map((r) => r.value)),
  );
  const restored = sessions.map(
    (ref, i) => restoredSessions(decisions[i]!)[0] ?? { ...ref, state: foldDecisions([]), published: [] },
  );
  await deps.frames.restoreExpired(epoch, restored);
}

/**
 * One attempt at rebuilding the frame store, under the store's lock (one validator rebuilds; the others
 * wait for its epoch). Run by the service's rebuild supervisor, which retries a failed attempt.
 */
export async function rebuildFrames(deps: RebuildDeps): Promise<void> {
  const { frames, logger } = deps;
  await withRebuildLock(
    frames.lifecycle,
    {
      owner: randomUUID(),
      ttlMs: deps.lockMs,
      onRenewFailed: (error) => logger.warn({ err: error }, 'could not renew the rebuild lock'),
    },
    async () => {
      logger.warn('frame store has no epoch: rebuilding it from the markers topic');
      await frames.lifecycle.clear();
      const decisions = await readMarkers(deps.bus);
      const sessions = restoredSessions(decisions);
      await frames.restore(randomUUID(), sessions);
      deps.onRebuilt?.(sessions.length);
      logger.info({ decisions: decisions.length, sessions: sessions.length }, 'frame store restored');
    },
  );
}

/** Every decision on the markers topic up to its end offsets as of now, per partition in log order. */
async function readMarkers(bus: Bus): Promise<MarkerDecision[]> {
  const admin = bus.kafka.admin();
  await admin.connect();
  let ends: Map<number, number>;
  try {
    const offsets = await admin.fetchTopicOffsets(bus.topics.markers);
    ends = new Map(offsets.map((o) => [o.partition, Number(o.high)]));
  } finally {
    await admin.disconnect();
  }
  const wanted = [...ends.values()].reduce((sum, high) => sum + high, 0);
  if (wanted === 0) return [];

  const byPartition = new Map<number, MarkerDecision[]>();
  const reached = new Set<number>([...ends].filter(([, high]) => high === 0).map(([p]) => p));
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const groupId = `tidemark-validator-rebuild-${randomUUID()}`;
  const consumer = bus.consumer({
    groupId,
    role: 'markers',
    fromBeginning: true,
    // A re-read: what could not be decoded was dead-lettered the first time round.
    publishDeadLetters: false,
    maxWaitTimeInMs: 100,
    onBatch: async (records, context) => {
      const end = ends.get(context.partition) ?? 0;
      for (const record of records) {
        if (record.raw.offset >= end) break;
        const list = byPartition.get(context.partition) ?? [];
        list.push(record.value);
        byPartition.set(context.partition, list);
      }
      // Undecodable records were dead-lettered and skipped: the last offset seen may fall short of the
      // end; the committed offsets (lag) tell when the partition is through.
      if (records.some((r) => r.raw.offset >= end - 1)) reached.add(context.partition);
      if (reached.size === ends.size) done();
      await Promise.resolve();
    },
  });
  await consumer.run();
  try {
    for (;;) {
      const through = await Promise.race([finished.then(() => true), sleep(250).then(() => false)]);
      if (through) break;
      if ((await consumer.lag()) === 0) break;
    }
  } finally {
    await consumer.stop();
    await deleteGroup(bus, groupId);
  }
  return [...byPartition.keys()].sort((a, b) => a - b).flatMap((p) => byPartition.get(p)!);
}

async function deleteGroup(bus: Bus, groupId: string): Promise<void> {
  const admin = bus.kafka.admin();
  try {
    await admin.connect();
    await admin.deleteGroups([groupId]);
  } catch {
    // A leftover group of a finished rebuild costs nothing but a name.
  } finally {
    await admin.disconnect();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
