import {
  buildResumeContext,
  type Compaction,
  defaultPolicy,
  planNodeId,
  type Policy,
  type ResumeContext,
  type ResumePlan,
  sessionKey,
  TidemarkCoreError,
  type TurnEvent,
} from '@tidemark/core';
import type { Logger } from 'pino';
import type { ResumeMetrics } from './metrics.js';
import type { L0Span } from '@tidemark/contract';
import { splitStoredPlan } from './session-plan.js';
import { ContextCache } from './context-cache.js';
import type { WatchRecorder } from './regression-watch.js';
import {
  refusal,
  refusalMessages,
  ResumeUnavailableError,
  type ResumeOutcome,
  type ResumeResult,
  type Stall,
  type StatusOutcome,
} from './outcomes.js';
import { compactionDue, StaleTracker, type CompactionDue, type Staleness } from './stale.js';

// One resume, in process: the library agent runtimes embed and the code behind the HTTP handler. It
// never repairs a summary and never mixes a distrusted node with raw patches: the plan (decided by the
// worker with core's session decider, resumePlan) names one node or none, and the context is that node
// plus every raw turn after its boundary, assembled by core buildResumeContext.
//
// Round trips for a digest-mode resume: one to Redis (plan + node in one script, the projection's
// watermark and epoch sent alongside on the same connection), then one Kafka fetch per 4 MiB of raw span.
// Raw mode from the session start adds one Redis round trip (where seq 1 lives in turns.l0).
//
// Every resume also says whether the session is stale (stale.ts): from the plan (which carries the
// newest decided L1 boundary), the watermark read alongside it and the policy in memory, with no extra
// round trip; only a boundary that is due and undecided costs a lookup of its turn's append time (one
// Redis read and one Fetch, once per boundary).

/** The plan store as the client reads it (PlanStore from @tidemark/state). */
export interface PlanReader {
  read(ref: {
    tenantId: string;
    sessionId: string;
  }): Promise<
    | { ok: true; plan: ResumePlan | null; node: Compaction | null; compactedToSeq: number }
    | { ok: false; reason: 'no_epoch' }
  >;
  recordContextHash(ref: { tenantId: string; sessionId: string }, key: string, hash: string): Promise<string>;
}

/** The L0 projection as the client reads it (Projection from @tidemark/state). */
export interface SessionLog {
  epoch(): Promise<string | null>;
  watermark(
    tenantId: string,
    sessionId: string,
  ): Promise<{
    readonly appliedSeq: number;
    /** The session's first refused turn or skipped change (a seq gap, a conflict), if any. */
    readonly broken?: { readonly seq: number; readonly reason: string } | null;
    /** Set while the session waits for the turn at expectedSeq (see the projection's Watermark). */
    readonly stalled?: Stall | null;
    /** Where the turn at appliedSeq is in turns.l0 (the projection's Watermark); where a raw read stops. */
    readonly offsets?: { readonly partition: number; readonly offset: number } | null;
  }>;
  l0Position(
    tenantId: string,
    sessionId: string,
    seq: number,
  ): Promise<{ partition: number; offset: number } | null>;
}

export interface TurnReader {
  read(span: L0Span): Promise<TurnEvent[]>;
  /** The append time (epoch ms) of the session's record at an offset; null when there is none or no time. */
  appendTime(at: { topic: string; partition: number; offset: number; key: string }): Promise<number | null>;
}

/** A resume context as the API returns it. */
export interface ResumeClientDeps {
  readonly plans: PlanReader;
  readonly log: SessionLog;
  readonly turns: TurnReader;
  /** The turns.l0 topic name (with the deployment's prefix). */
  readonly turnsTopic: string;
  readonly metrics?: ResumeMetrics;
  readonly logger?: Logger;
  /** Compare every context with the first served for the same node and raw span (default true). */
  readonly divergenceChecks?: boolean;
  /** Bytes of built contexts kept for repeated resumes (default 32 MiB; 0 keeps none). */
  readonly contextCacheBytes?: number;
  /** Each session's compaction policy, as the compactor applies it (default: core's defaultPolicy). */
  readonly policyFor?: (ref: { readonly tenantId: string; readonly sessionId: string }) => Policy;
  /** How long a due compaction may stay undecided before the session is reported stale (default 30 s). */
  readonly staleAfterMs?: number;
  /** The clock the stale check reads (tests). */
  readonly now?: () => number;
  /** Records what the agent's next turns are watched for after a built context (regression-watch.ts). */
  readonly watch?: WatchRecorder;
}

export interface ResumeOptions {
  /**
   * Whether this is an agent resuming, whose next turns are watched for steps ruled out before the
   * boundary (default true). False for a look that is not a resume (`tidemark inspect`).
   */
  readonly watch?: boolean;
}

export interface ResumeClient {
  resume(tenantId: string, sessionId: string, options?: ResumeOptions): Promise<ResumeOutcome>;
  /** The session's plan, watermark, next due compaction and staleness, without building a context. */
  status(tenantId: string, sessionId: string): Promise<StatusOutcome>;
}

/** The client and what it registered (the stale gauge's source), released when its owner closes. */
export interface ResumeClientHandle extends ResumeClient {
  release(): void;
}

export function createResumeClientFrom(deps: ResumeClientDeps): ResumeClientHandle {
  const { plans, log, turns, metrics } = deps;
  const policyFor = deps.policyFor ?? (() => defaultPolicy);
  const tracker = new StaleTracker({
    staleAfterMs: deps.staleAfterMs ?? 30_000,
    ...(deps.logger === undefined ? {} : { logger: deps.logger }),
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
  const staleSource = () => tracker.staleSessions();
  metrics?.staleSources.add(staleSource);
  const checkDivergence = deps.divergenceChecks ?? true;
  // A context is a pure function of its session, node and raw span: the node is content-addressed and
  // L0 turns never change once written. So a context built once is kept (bounded by bytes) and served
  // again while the plan still names the same node and the watermark the same last turn; the plan and
  // the watermark are read from Redis on every resume, so a moved plan or a new turn is never missed.
  const cache = new ContextCache(deps.contextCacheBytes ?? 32 * 1024 * 1024);

  const attempt = async (
    tenantId: string,
    sessionId: string,
    options: ResumeOptions,
  ): Promise<ResumeOutcome> => {
    const ref = { tenantId, sessionId };
    // Sent together: ioredis writes all three on one connection before reading any reply.
    const [stored, epoch, watermark] = await Promise.all([
      plans.read(ref),
      log.epoch(),
      log.watermark(tenantId, sessionId),
    ]);
    if (!stored.ok || epoch === null) return refusal('rebuilding');
    const { node } = stored;
    if (stored.plan === null) {
      if (watermark.appliedSeq === 0) return refusal('session_not_found');
      // Not in the answer (a refusal), but in the gauge and the log: no L1 decided at all yet.
      await staleness(ref, null, watermark.appliedSeq);
      return refusal('no_plan');
    }
    const { plan } = splitStoredPlan(stored.plan);
    const nodeId = planNodeId(plan);
    if (nodeId !== null && node?.compactionId !== nodeId) return refusal('node_pending');
    const rawToSeq = watermark.appliedSeq;
    if (rawToSeq < plan.rawFromSeq - 1) return refusal('projection_behind');
    // Evaluated beside the context (it never rejects); it reads nothing unless a boundary is overdue.
    const stale = staleness(ref, stored.plan, rawToSeq).then((s) => s.stale);

    // The regression watch a served resume leaves (a refused one leaves none), never a reason to fail
    // it; the recorder writes it once per session, boundary and last turn.
    const leaveWatch = async (): Promise<void> => {
      if (options.watch === false || deps.watch === undefined) return;
      await deps.watch(plan, rawToSeq).catch((error: unknown) => {
        deps.logger?.warn({ err: error, ...ref }, 'regression watch not recorded');
      });
    };

    const cacheKey = JSON.stringify([tenantId, sessionId, nodeId, plan.rawFromSeq, rawToSeq]);
    const cached = cache.get(cacheKey);
    if (cached !== undefined) {
      metrics?.contextCache.inc({ result: 'hit' });
      await leaveWatch();
      return {
        ok: true,
        result: resultOf(plan, nodeId, rawToSeq, cached, await stale, watermark),
        context: { ...cached, plan },
      };
    }
    metrics?.contextCache.inc({ result: 'miss' });

    let raw: TurnEvent[] = [];
    if (rawToSeq >= plan.rawFromSeq) {
      const start = await startOf(plan);
      if (start === null) return refusal('projection_behind');
      raw = await turns.read({
        topic: deps.turnsTopic,
        partition: start.partition,
        fromOffset: start.offset,
        // Up to the watermark's turn, which the projection places: the turns a session applied sit at
        // rising offsets (an early turn applies from the copy re-published after the one it waited for),
        // so none is past it, and the partition's later traffic is not fetched. Without a position on
        // this partition: forward until the last applied seq is found (or the end of the partition).
        toOffset:
          watermark.offsets?.partition === start.partition
            ? watermark.offsets.offset
            : Number.MAX_SAFE_INTEGER,
        key: sessionKey(tenantId, sessionId),
        fromSeq: plan.rawFromSeq,
        toSeq: rawToSeq,
      });
      if (raw.length !== rawToSeq - plan.rawFromSeq + 1) return refusal('l0_incomplete');
    }
    const context = buildResumeContext({ plan, node: nodeId === null ? null : node, turns: raw });
    cache.set(cacheKey, context);
    metrics?.rawTurns.observe({ mode: plan.mode }, raw.length);
    if (checkDivergence)
      divergence(ref, `${nodeId ?? 'start'}:${plan.rawFromSeq}:${rawToSeq}`, context.contextHash);
    await leaveWatch();
    return {
      ok: true,
      result: resultOf(plan, nodeId, rawToSeq, context, await stale, watermark),
      context,
    };
  };

  // The session against its policy's L1 cadence, and whether the due compaction is overdue. The newest
  // decided L1 boundary comes with the stored plan.
  const staleness = async (
    ref: { tenantId: string; sessionId: string },
    storedPlan: ResumePlan | null,
    appliedSeq: number,
  ): Promise<{ compaction: CompactionDue; stale: Staleness | null }> => {
    const { l1EveryTurns } = policyFor(ref);
    try {
      const decided = storedPlan === null ? 0 : splitStoredPlan(storedPlan).decidedL1ToSeq;
      const compaction = compactionDue(decided, appliedSeq, l1EveryTurns);
      const stale = await tracker.evaluate(ref, compaction, () => appendTimeOf(ref, compaction.dueSeq));
      return { compaction, stale };
    } catch (error) {
      // The check is an addition to the answer, never a reason to refuse it.
      deps.logger?.warn({ err: error, ...ref }, 'stale check failed');
      return { compaction: compactionDue(0, 0, l1EveryTurns), stale: null };
    }
  };

  // When the turn at seq was appended to turns.l0: its record's timestamp, at the position the
  // projection keeps for the seq.
  const appendTimeOf = async (
    ref: { tenantId: string; sessionId: string },
    seq: number,
  ): Promise<number | null> => {
    const position = await log.l0Position(ref.tenantId, ref.sessionId, seq);
    if (position === null) return null;
    return turns.appendTime({
      topic: deps.turnsTopic,
      partition: position.partition,
      offset: position.offset,
      key: sessionKey(ref.tenantId, ref.sessionId),
    });
  };

  const status = async (tenantId: string, sessionId: string): Promise<StatusOutcome> => {
    const ref = { tenantId, sessionId };
    const [stored, epoch, watermark] = await Promise.all([
      plans.read(ref),
      log.epoch(),
      log.watermark(tenantId, sessionId),
    ]);
    if (!stored.ok || epoch === null)
      return { ok: false, code: 'rebuilding', message: refusalMessages.rebuilding };
    if (stored.plan === null && watermark.appliedSeq === 0)
      return { ok: false, code: 'session_not_found', message: refusalMessages.session_not_found };
    const { compaction, stale } = await staleness(ref, stored.plan, watermark.appliedSeq);
    const plan = stored.plan === null ? null : splitStoredPlan(stored.plan).plan;
    return {
      ok: true,
      status: {
        tenantId,
        sessionId,
        plan:
          plan === null
            ? null
            : {
                mode: plan.mode,
                reason: plan.mode === 'raw' ? plan.reason : null,
                markerId: plan.mode === 'digest' ? plan.marker.markerId : plan.checkpoint.markerId,
                nodeId: planNodeId(plan),
                frame: plan.frame,
                rawFromSeq: plan.rawFromSeq,
              },
        appliedSeq: watermark.appliedSeq,
        lastCompactedSeq: stored.compactedToSeq,
        compaction,
        stale,
        broken: watermark.broken ?? null,
        stalled: watermark.stalled ?? null,
        // Every L1 the applied turns make due is decided (and the plan follows it): nothing is on its way.
        settled: !compaction.due,
      },
    };
  };

  // Where the raw span starts in turns.l0: right after the plan's boundary (the marker carries its
  // partition and offset), or where seq 1 lives when the plan is the session start.
  const startOf = async (plan: ResumePlan): Promise<{ partition: number; offset: number } | null> => {
    const boundary =
      plan.mode === 'digest'
        ? { partition: plan.marker.l0Partition, offset: plan.marker.l0Offset }
        : plan.checkpoint.l0Offset === null
          ? null
          : { partition: plan.checkpoint.l0Partition, offset: plan.checkpoint.l0Offset };
    if (boundary !== null) return { partition: boundary.partition, offset: boundary.offset + 1 };
    return log.l0Position(plan.tenantId, plan.sessionId, plan.rawFromSeq);
  };

  // The same node and raw span must always give the same bytes; the first hash served is kept and
  // every later one compared with it, off the request's path.
  const divergence = (ref: { tenantId: string; sessionId: string }, key: string, hash: string): void => {
    plans
      .recordContextHash(ref, key, hash)
      .then((first) => {
        const result = first === hash ? 'match' : 'mismatch';
        metrics?.divergenceChecks.inc({ result });
        if (result === 'mismatch')
          deps.logger?.error({ ...ref, key, hash, first }, 'resume context diverged');
      })
      .catch((error: unknown) => deps.logger?.warn({ err: error }, 'divergence check failed'));
  };

  return {
    async resume(tenantId, sessionId, options = {}) {
      const started = process.hrtime.bigint();
      let outcome: ResumeOutcome;
      try {
        outcome = await attempt(tenantId, sessionId, options);
      } catch (error) {
        // A core error is ours (an inconsistent plan), not a dependency's: it stays what it is.
        if (error instanceof TidemarkCoreError) {
          metrics?.resumes.inc({ mode: 'none', outcome: 'internal' });
          throw error;
        }
        metrics?.resumes.inc({ mode: 'none', outcome: 'unavailable' });
        throw error instanceof ResumeUnavailableError
          ? error
          : new ResumeUnavailableError(`resume failed: ${(error as Error).message}`, { cause: error });
      }
      const mode = outcome.ok ? outcome.result.mode : 'none';
      metrics?.resumes.inc({ mode, outcome: outcome.ok ? 'ok' : outcome.code });
      if (outcome.ok) metrics?.latency.observe({ mode }, Number(process.hrtime.bigint() - started) / 1e9);
      return outcome;
    },
    async status(tenantId, sessionId) {
      try {
        return await status(tenantId, sessionId);
      } catch (error) {
        if (error instanceof TidemarkCoreError) throw error;
        throw new ResumeUnavailableError(`status failed: ${(error as Error).message}`, { cause: error });
      }
    },
    release() {
      metrics?.staleSources.delete(staleSource);
    },
  };
}

function resultOf(
  plan: ResumePlan,
  nodeId: string | null,
  rawToSeq: number,
  context: Pick<ResumeContext, 'messages' | 'contextHash'>,
  stale: Staleness | null,
  watermark: { readonly broken?: ResumeResult['broken']; readonly stalled?: Stall | null },
): ResumeResult {
  return {
    tenantId: plan.tenantId,
    sessionId: plan.sessionId,
    mode: plan.mode,
    markerId: plan.mode === 'digest' ? plan.marker.markerId : plan.checkpoint.markerId,
    nodeId,
    reason: plan.mode === 'raw' ? plan.reason : null,
    frame: plan.frame,
    rawFromSeq: plan.rawFromSeq,
    rawToSeq,
    messages: context.messages,
    contextHash: context.contextHash,
    stale,
    broken: watermark.broken ?? null,
    stalled: watermark.stalled ?? null,
  };
}
