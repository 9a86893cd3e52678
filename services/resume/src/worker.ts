import type { Compaction, MarkerDecision } from '@tidemark/core';
import type { Bus, DecodedRecord, EventConsumer } from '@tidemark/contract';
import {
  sessionKeyOf,
  type membershipOption,
  type PlanStore,
  type PlanWrite,
  type SessionRef,
} from '@tidemark/state';
import { isRedisOutageError } from '@tidemark/service';
import type { Logger } from 'pino';
import type { ResumeMetrics } from './metrics.js';
import { applyDecisions, emptySessionState, storedPlanOf, type SessionPlanState } from './session-plan.js';

// The resume worker: two consumers in the service's own groups.
// - markers (group `<group>`): each batch's decisions are folded per session with core's session decider
//   (session-plan.ts) and the sessions' state and plans written in one round trip (one CAS script per
//   session, pipelined).
// - compactions (group `<group>-nodes`): every node is stored, one round trip per batch, because a plan
//   may start from any node a marker names (digest mode) or a checkpoint falls back to (raw mode).
//
// Sessions a worker has loaded stay in memory (bounded, least recently used first out), so a batch
// whose sessions are all cached costs one Redis round trip; the store's version guard catches the
// case where the cache is stale (the partition moved to another worker and back): the write is refused,
// the session dropped from the cache and the batch redelivered, which reloads it.

export interface ResumeWorkerOptions {
  readonly bus: Bus;
  readonly plans: PlanStore;
  readonly groupId: string;
  readonly logger: Logger;
  readonly metrics: ResumeMetrics;
  /** Sessions kept in memory (default 10,000). */
  readonly cacheSessions?: number;
  /** How long the group waits for a silent member (a killed worker) before moving its partitions. */
  readonly sessionTimeoutMs?: number;
  /** The membership option of a group's consumer (a stable INSTANCE_ID's; see ConsumeOptions). */
  readonly membershipOf?: (groupId: string) => ReturnType<typeof membershipOption>;
  /** Rebuilds a session whose plan expired (idle past the retention); absent: plans never expire. */
  readonly restoreExpired?: (epoch: string, ref: SessionRef) => Promise<void>;
  /** The store's retention (0: none): a session cached longer than this may have expired, and is reloaded. */
  readonly stateRetentionMs?: number;
}

interface Cached {
  readonly epoch: string;
  readonly version: number;
  readonly state: SessionPlanState;
  /** When it was loaded or written (ms). */
  readonly at: number;
}

export class ResumeWorker {
  readonly #options: ResumeWorkerOptions;
  readonly #cache = new Map<string, Cached>();
  readonly #cacheLimit: number;
  #markers: EventConsumer | null = null;
  #compactions: EventConsumer | null = null;
  #lost = false;

  constructor(options: ResumeWorkerOptions) {
    this.#options = options;
    this.#cacheLimit = options.cacheSessions ?? 10_000;
  }

  get groups(): readonly string[] {
    return [this.#options.groupId, `${this.#options.groupId}-nodes`];
  }

  async start(): Promise<void> {
    const { bus } = this.#options;
    this.#markers = bus.consumer({
      groupId: this.#options.groupId,
      role: 'markers',
      fromBeginning: true,
      ...(this.#options.sessionTimeoutMs === undefined
        ? {}
        : { sessionTimeout: this.#options.sessionTimeoutMs }),
      ...this.#options.membershipOf?.(this.#options.groupId),
      reportedBy: isRedisOutageError,
      onBatch: (records) => this.applyMarkers(records),
    });
    this.#compactions = bus.consumer({
      groupId: `${this.#options.groupId}-nodes`,
      role: 'compactions',
      fromBeginning: true,
      ...(this.#options.sessionTimeoutMs === undefined
        ? {}
        : { sessionTimeout: this.#options.sessionTimeoutMs }),
      ...this.#options.membershipOf?.(`${this.#options.groupId}-nodes`),
      reportedBy: isRedisOutageError,
      onBatch: (records) => this.storeNodes(records),
    });
    await Promise.all([this.#markers.run(), this.#compactions.run()]);
  }

  ready(): boolean {
    return !this.#lost && (this.#markers?.ready() ?? false) && (this.#compactions?.ready() ?? false);
  }

  /** True once the store was found lost: the worker stops being ready until it is rebuilt. */
  get lost(): boolean {
    return this.#lost;
  }

  async lag(): Promise<number> {
    const lags = await Promise.all(
      [this.#markers, this.#compactions].map((c) => c?.lag() ?? Promise.resolve(0)),
    );
    return lags.reduce((a, b) => a + b, 0);
  }

  async stop(): Promise<void> {
    const consumers = [this.#markers, this.#compactions];
    this.#markers = null;
    this.#compactions = null;
    await Promise.all(consumers.map((c) => c?.stop() ?? Promise.resolve()));
    this.#cache.clear();
  }

  async storeNodes(records: readonly DecodedRecord<Compaction>[]): Promise<void> {
    await this.#options.plans.putNodes(records.map((r) => r.value));
    this.#options.metrics.nodes.inc(records.length);
  }

  async applyMarkers(records: readonly DecodedRecord<MarkerDecision>[]): Promise<void> {
    const { plans, metrics, logger } = this.#options;
    const bySession = new Map<
      string,
      { tenantId: string; sessionId: string; records: { offset: number; decision: MarkerDecision }[] }
    >();
    for (const { raw, value } of records) {
      const key = sessionKeyOf(value);
      let entry = bySession.get(key);
      if (entry === undefined) {
        entry = { tenantId: value.tenantId, sessionId: value.sessionId, records: [] };
        bySession.set(key, entry);
      }
      entry.records.push({ offset: raw.offset, decision: value });
      metrics.decisions.inc({ type: value.type });
    }
    if (bySession.size === 0) return;

    // Load the sessions not in memory (one round trip; none when every session is cached).
    const missing = [...bySession.entries()].filter(([key]) => !this.#cached(key)).map(([, s]) => s);
    let epoch = this.#cache.get(bySession.keys().next().value!)?.epoch ?? null;
    if (missing.length > 0) {
      let loaded = await plans.load(missing);
      if (!loaded.ok) return this.#storeLost();
      const { epoch: loadedEpoch, sessions: loadedSessions } = loaded;
      const expired = missing.filter((ref) => loadedSessions.get(sessionKeyOf(ref))!.expired);
      if (expired.length > 0) {
        // Rebuilt from the topics first (the batch's own decisions among them), then loaded as any other.
        const { restoreExpired } = this.#options;
        if (restoreExpired === undefined) throw new Error('expired plans and no way to restore them');
        await Promise.all(expired.map((ref) => restoreExpired(loadedEpoch, ref)));
        metrics.restored.inc(expired.length);
        loaded = await plans.load(missing);
        if (!loaded.ok) return this.#storeLost();
      }
      epoch = loaded.epoch;
      for (const ref of missing) {
        const stored = loaded.sessions.get(sessionKeyOf(ref))!;
        const state =
          stored.state === null
            ? emptySessionState(ref.tenantId, ref.sessionId)
            : (JSON.parse(stored.state) as SessionPlanState);
        this.#remember(sessionKeyOf(ref), {
          epoch: loaded.epoch,
          version: stored.version,
          state,
          at: Date.now(),
        });
      }
    }

    const writes: PlanWrite[] = [];
    const next = new Map<string, Cached>();
    for (const [key, session] of bySession) {
      const cached = this.#cache.get(key)!;
      // Cached sessions of an older epoch are stale (Redis was lost and rebuilt meanwhile).
      const { state, changed } = applyDecisions(cached.state, session.records);
      if (!changed || state.plan === null) continue;
      writes.push({
        tenantId: session.tenantId,
        sessionId: session.sessionId,
        version: cached.version,
        state: JSON.stringify(state),
        plan: storedPlanOf({ ...state, plan: state.plan }),
      });
      next.set(key, { epoch: cached.epoch, version: cached.version + 1, state, at: Date.now() });
    }
    if (writes.length === 0) return;
    const committed = await plans.commit(epoch ?? '', writes);
    if (!committed.ok) {
      metrics.conflicts.inc({ reason: committed.reason }, committed.sessions.length);
      // Forget every session of the batch: the redelivery reloads them (applied offsets are skipped).
      for (const key of bySession.keys()) this.#cache.delete(key);
      if (committed.reason === 'epoch') return this.#storeLost();
      logger.warn(
        { sessions: committed.sessions.length },
        'plan write conflict (the partition moved); redelivering the batch',
      );
      throw new Error('plan write conflict: batch will be redelivered');
    }
    for (const [key, cached] of next) this.#remember(key, cached);
  }

  /** Whether a session is cached, and recently enough that its plan cannot have expired in the store. */
  #cached(key: string): boolean {
    const cached = this.#cache.get(key);
    if (cached === undefined) return false;
    const retention = this.#options.stateRetentionMs ?? 0;
    return retention === 0 || Date.now() - cached.at < retention * 0.9;
  }

  #remember(key: string, cached: Cached): void {
    this.#cache.delete(key);
    this.#cache.set(key, cached);
    if (this.#cache.size > this.#cacheLimit) this.#cache.delete(this.#cache.keys().next().value!);
  }

  #storeLost(): never {
    this.#cache.clear();
    if (!this.#lost)
      this.#options.logger.error(
        'resume store lost (no epoch): plans must be rebuilt from the markers topic',
      );
    this.#lost = true;
    throw new Error('resume store lost: batch will be redelivered after the rebuild');
  }
}
