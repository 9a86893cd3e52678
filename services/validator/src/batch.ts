import {
  boundaryQuery,
  type BoundaryQuery,
  type CheckOptions,
  type Compaction,
  decide,
  evolve,
  type MarkerDecision,
  type SessionFrameState,
  type StateAtBoundary,
  TidemarkError,
} from '@tidemark/core';
import { sessionKeyOf, type FrameWrite, type LoadedSession, type SessionRef } from '@tidemark/state';
import { missingState } from './decide.js';
import type { WaitResult } from './metrics.js';
import { commitDecisions, loadFrames, type WriteAheadDeps } from './write-ahead.js';

// One fetched batch of compactions (one partition, offset order) becomes its decisions:
//   1. load the frames of the batch's sessions and what the store knows of its compactions, and
//   2. read every session's watermark and the state at every boundary, all together (pipelined by the
//      client into one round trip); sessions whose boundaries are not all covered then wait, bounded,
//      until their watermark covers the furthest boundary the batch needs, and are read again
//   4. decide in order, session by session (core's session decider: decide, then evolve)
//   5. record the decisions and new frames, write-ahead (1 round trip)
//   6. publish them, in order, in one send; 7. confirm them published (sent, not waited for)
// and then the consumer commits the batch's offsets. A crash before 5 decides again from the same
// frames; after 5, a redelivery re-publishes the recorded bytes (consumers dedupe by markerId); after
// 7 it publishes nothing. So a compaction delivered twice yields one decision, and none is ever
// published with other content.

/** What the validator reads of the L0 projection (the materializer's `Projection` is one). */
export interface ProjectionReader {
  waitForWatermark(
    tenantId: string,
    sessionId: string,
    seq: number,
    timeoutMs: number,
  ): Promise<{ ok: true } | { ok: false; reason: 'timeout' | 'broken' | 'rebuilding' }>;
  watermark(
    tenantId: string,
    sessionId: string,
  ): Promise<{ appliedSeq: number; broken: { seq: number } | null }>;
  stateAt(query: BoundaryQuery): Promise<StateAtBoundary>;
}

export interface BatchDeps extends WriteAheadDeps {
  readonly projection: ProjectionReader;
  readonly watermarkTimeoutMs: number;
  readonly check?: CheckOptions;
}

export interface BatchInput {
  readonly node: Compaction;
  /** The compaction record's append time (Kafka timestamp, ms), for the latency metric; null if unknown. */
  readonly appendedAt: number | null;
}

export type BatchOutcome = {
  readonly published: number;
  readonly decided: number;
  readonly redelivered: number;
};

/**
 * Boundaries of the batch the projection has not reached yet, for the pipeline's own reasons: it is
 * redelivered, and decided once the state is there (a verdict never depends on how long that took).
 */
class StateBehindError extends TidemarkError<'state_unavailable'> {
  override readonly name: string = 'StateBehindError';
  constructor(boundaries: number) {
    super('state_unavailable', `the projection is behind ${boundaries} boundaries of the batch`, {
      retriable: true,
    });
  }
}

interface SessionWork extends SessionRef {
  readonly inputs: BatchInput[];
}

export async function decideBatch(
  deps: BatchDeps,
  inputs: readonly BatchInput[],
  heartbeat: () => Promise<void> = async () => {},
): Promise<BatchOutcome> {
  const started = performance.now();
  const startedAt = Date.now();
  const sessions = groupBySession(inputs);
  const loads = [...sessions.values()].map((s) => ({
    tenantId: s.tenantId,
    sessionId: s.sessionId,
    compactionIds: [...new Set(s.inputs.map((i) => i.node.compactionId))],
  }));

  // The frames and the state at every boundary are independent reads: sent together, one round trip.
  const [{ epoch, sessions: loadedSessions }, read] = await Promise.all([
    loadFrames(deps, loads),
    readBoundaries(deps, sessions),
  ]);
  const loaded = performance.now();

  // What is new, what was already recorded (re-send those exact bytes), what was already published.
  const toDecide = new Map<string, BatchInput[]>();
  const resend = new Map<string, readonly MarkerDecision[]>(); // compactionId -> recorded decisions
  let redelivered = 0;
  for (const [key, work] of sessions) {
    const session = loadedSessions.get(key)!;
    const fresh: BatchInput[] = [];
    const seen = new Set<string>();
    for (const input of work.inputs) {
      const id = input.node.compactionId;
      const record = session.decided.get(id);
      if (seen.has(id) || record !== undefined) {
        redelivered++;
        deps.metrics.redelivered(record?.status === 'pending' ? 'pending' : 'published');
        if (record?.status === 'pending') resend.set(id, record.decisions);
        continue;
      }
      seen.add(id);
      fresh.push(input);
    }
    if (fresh.length > 0) toDecide.set(key, fresh);
  }

  const decided = await decideSessions(deps, sessions, loadedSessions, toDecide, read);
  const decidedAt = performance.now();
  await heartbeat(); // the wait may have been long

  // Publish in record order: within a session, the order decisions were made in.
  const output: MarkerDecision[] = [];
  const sentFor = new Set<string>();
  for (const input of inputs) {
    const id = input.node.compactionId;
    if (sentFor.has(id)) continue;
    const decisions = decided.byCompaction.get(id) ?? resend.get(id);
    if (decisions === undefined) continue;
    sentFor.add(id);
    output.push(...decisions);
  }

  const confirmations = [...sessions.values()]
    .map((s) => ({
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      compactionIds: [...new Set(s.inputs.map((i) => i.node.compactionId))].filter((id) => sentFor.has(id)),
    }))
    .filter((s) => s.compactionIds.length > 0);
  await commitDecisions(deps, epoch, decided.writes, output, confirmations);
  if (output.length > 0) {
    const appendedAt = Date.now();
    for (const input of inputs) {
      // Redeliveries are not decisions: their latency would measure the outage, not the validator.
      if (input.appendedAt !== null && decided.byCompaction.has(input.node.compactionId)) {
        deps.metrics.latency((appendedAt - input.appendedAt) / 1000);
      }
    }
  }

  const appended = inputs.flatMap((input) => (input.appendedAt === null ? [] : [input.appendedAt]));
  const timing = {
    queued: appended.length === 0 ? null : (startedAt - Math.min(...appended)) / 1000,
    load: (loaded - started) / 1000,
    decide: (decidedAt - loaded) / 1000,
    commit: (performance.now() - decidedAt) / 1000,
  };
  deps.metrics.batch(timing, inputs.length);
  return { published: output.length, decided: decided.byCompaction.size, redelivered };
}

async function decideSessions(
  deps: BatchDeps,
  sessions: ReadonlyMap<string, SessionWork>,
  loaded: ReadonlyMap<string, LoadedSession>,
  toDecide: ReadonlyMap<string, BatchInput[]>,
  read: ReadonlyMap<string, BoundaryReads>,
): Promise<{ byCompaction: Map<string, readonly MarkerDecision[]>; writes: FrameWrite[] }> {
  const byCompaction = new Map<string, readonly MarkerDecision[]>();
  const writes: FrameWrite[] = [];
  if (toDecide.size === 0) return { byCompaction, writes };

  // Fast path: a boundary is decided on what readBoundaries read when the state's own watermark (read
  // atomically with it) covers it and no broken mark lies at or before it.
  const states = new Map<string, StateAtBoundary>();
  const lagging = new Map<string, BatchInput[]>();
  for (const [key, inputs] of toDecide) {
    const { watermark, states: at } = read.get(key)!;
    const limit = coveredBy(watermark);
    if (
      inputs.every(({ node }) => node.span.toSeq <= Math.min(limit, at.get(node.compactionId)!.appliedSeq))
    ) {
      for (const { node } of inputs) states.set(node.compactionId, at.get(node.compactionId)!);
      deps.metrics.waited('immediate', 0);
    } else {
      lagging.set(key, inputs);
    }
  }

  // 2. Slow path: the watermark each lagging session must reach, waited for concurrently, bounded.
  const waitStarted = performance.now();
  const watermarks = new Map<string, { appliedSeq: number; broken: { seq: number } | null }>();
  await Promise.all(
    [...lagging].map(async ([key, inputs]) => {
      const { tenantId, sessionId } = sessions.get(key)!;
      const needed = Math.max(...inputs.map((i) => i.node.span.toSeq));
      const waited = await deps.projection.waitForWatermark(
        tenantId,
        sessionId,
        needed,
        deps.watermarkTimeoutMs,
      );
      const result: WaitResult = waited.ok ? 'ok' : waited.reason;
      deps.metrics.waited(result, (performance.now() - waitStarted) / 1000);
      // Read after the wait: every turn up to it is applied before the state reads below.
      watermarks.set(key, await deps.projection.watermark(tenantId, sessionId));
    }),
  );

  // 3. Slow path: each boundary is decided on its state once the watermark covers it, or as
  // unverifiable when a broken mark lies at or before it (the log itself keeps that state from ever
  // being complete). Anything else is the pipeline's own delay (the materializer behind, the
  // projection rebuilding after a Redis loss): deciding on it would make the verdict a function of
  // timing, so the batch is deferred (redelivered) and decided once the state is there.
  let behind = 0;
  await Promise.all(
    [...lagging].flatMap(([key, inputs]) =>
      inputs.map(async ({ node }) => {
        const watermark = watermarks.get(key)!;
        const toSeq = node.span.toSeq;
        if (toSeq <= coveredBy(watermark)) {
          // The state's own watermark (read with it) must still cover the boundary: Redis may have been
          // lost, and the projection be rebuilding, since the wait.
          const state = await deps.projection.stateAt(boundaryQuery(node));
          if (state.appliedSeq >= toSeq) states.set(node.compactionId, state);
          else behind++;
        } else if (watermark.broken !== null && watermark.broken.seq <= toSeq) {
          states.set(node.compactionId, missingState(node, coveredBy(watermark)));
        } else {
          behind++;
        }
      }),
    ),
  );
  if (behind > 0) {
    deps.metrics.deferred();
    deps.logger.warn(
      { boundaries: behind, sessions: lagging.size, waitedMs: deps.watermarkTimeoutMs },
      'the projection has not reached these boundaries yet (materializer behind or rebuilding): the batch is deferred',
    );
    throw new StateBehindError(behind);
  }

  // 4. Decide in order per session, then one write per session.
  for (const [key, inputs] of toDecide) {
    const session = loaded.get(key)!;
    let state: SessionFrameState = session.frame.state;
    const decided: FrameWrite['decided'][number][] = [];
    for (const { node } of inputs) {
      const check = deps.check === undefined ? {} : { options: deps.check };
      const decisions = decide({ node, state: states.get(node.compactionId)!, ...check }, state);
      state = decisions.reduce(evolve, state);
      // Recorded even when empty (a repair no verdict asked for, a node decided already): its
      // redelivery is then answered from the store.
      byCompaction.set(node.compactionId, decisions);
      decided.push({ compactionId: node.compactionId, decisions });
      const verdict = decisions.at(-1);
      deps.logger.debug(
        {
          session: key,
          compactionId: node.compactionId,
          verdict: verdict?.type ?? 'none',
          conditions: verdict?.type === 'marker_invalid' ? verdict.violations.map((v) => v.condition) : [],
          depthInvalidations: Math.max(0, decisions.length - 1),
        },
        'compaction decided',
      );
    }
    const { tenantId, sessionId } = sessions.get(key)!;
    writes.push({ tenantId, sessionId, guard: session.frame.guard, state, decided });
  }
  return { byCompaction, writes };
}

/** A session's watermark and the state at each of its batch's boundaries (by compaction id), read together. */
interface BoundaryReads {
  readonly watermark: { appliedSeq: number; broken: { seq: number } | null };
  readonly states: ReadonlyMap<string, StateAtBoundary>;
}

/**
 * 2+3 of the batch, fast path: every session's watermark and the state at every boundary of the batch,
 * read together (the client pipelines them, and the frames' load, into one round trip). A compaction
 * that turns out to be a redelivery was read for nothing: rare, and cheaper than a round trip more.
 */
async function readBoundaries(
  deps: BatchDeps,
  sessions: ReadonlyMap<string, SessionWork>,
): Promise<Map<string, BoundaryReads>> {
  const reads = await Promise.all(
    [...sessions].map(async ([key, { tenantId, sessionId, inputs }]) => {
      const nodes = [...new Map(inputs.map(({ node }) => [node.compactionId, node])).values()];
      const [watermark, states] = await Promise.all([
        deps.projection.watermark(tenantId, sessionId),
        Promise.all(nodes.map((node) => deps.projection.stateAt(boundaryQuery(node)))),
      ]);
      const byId = new Map(nodes.map((node, i) => [node.compactionId, states[i]!]));
      return [key, { watermark, states: byId }] as const;
    }),
  );
  return new Map(reads);
}

/**
 * How far a session's boundaries may be decided: its watermark, but not at or past a broken mark (a
 * refused turn, or a skipped change inside an applied one), however far the session was applied.
 */
function coveredBy(watermark: { appliedSeq: number; broken: { seq: number } | null }): number {
  const { appliedSeq, broken } = watermark;
  return broken === null ? appliedSeq : Math.min(appliedSeq, broken.seq - 1);
}

function groupBySession(inputs: readonly BatchInput[]): Map<string, SessionWork> {
  const sessions = new Map<string, SessionWork>();
  for (const input of inputs) {
    const ref = { tenantId: input.node.tenantId, sessionId: input.node.sessionId };
    const key = sessionKeyOf(ref);
    let work = sessions.get(key);
    if (work === undefined) sessions.set(key, (work = { ...ref, inputs: [] }));
    work.inputs.push(input);
  }
  return sessions;
}
