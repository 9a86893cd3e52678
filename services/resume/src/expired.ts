import type { Compaction } from '@tidemark/core';
import type { SessionHistory } from '@tidemark/contract';
import type { PlanStore, SessionRef } from '@tidemark/state';
import type { PlanReader } from './client.js';
import { applyDecisions, emptySessionState, storedPlanOf, type SessionPlanState } from './session-plan.js';

// Bounded state: a session's plan and nodes expire STATE_RETENTION_MS after its last plan commit (see
// PlanStore). An expired session is rebuilt here, from its own records on the compactions and markers
// topics (one partition each), the moment it is needed again: by a resume or status read, or by the
// worker when a new decision arrives. The plan is the same fold the worker makes (applyDecisions), so it
// is the plan the session had.

export class ExpiredPlans {
  readonly #plans: PlanStore;
  readonly #history: SessionHistory;

  constructor(plans: PlanStore, history: SessionHistory) {
    this.#plans = plans;
    this.#history = history;
  }

  /**
   * Stores the session's nodes, then its plan over the absent one (a restorer that got there first
   * wins; the next load or read finds the plan either way).
   */
  async restore(epoch: string, ref: SessionRef): Promise<void> {
    const [markers, compactions] = await Promise.all([
      this.#history.read('markers', ref),
      this.#history.read('compactions', ref),
    ]);
    // Nodes first: the plan names one.
    const nodes = new Map<string, Compaction>();
    for (const { value } of compactions.records) nodes.set(value.compactionId, value);
    await this.#plans.putNodes([...nodes.values()]);
    const { state } = applyDecisions(
      emptySessionState(ref.tenantId, ref.sessionId),
      markers.records.map((record) => ({ offset: record.raw.offset, decision: record.value })),
    );
    if (state.plan === null) return;
    await this.#plans.commit(epoch, [
      {
        tenantId: ref.tenantId,
        sessionId: ref.sessionId,
        version: 0,
        state: JSON.stringify(state),
        plan: storedPlanOf({ ...state, plan: state.plan }),
      },
    ]);
  }

  /** A stored node of the session, restoring an expired session first; 'rebuilding' while the store is. */
  async node(ref: SessionRef, compactionId: string): Promise<Compaction | null | 'rebuilding'> {
    let found = await this.#plans.node(ref, compactionId);
    if (found.ok && found.node === null && found.expired) {
      await this.restore(found.epoch, ref);
      found = await this.#plans.node(ref, compactionId);
    }
    return found.ok ? found.node : 'rebuilding';
  }

  /**
   * The worker's state of a session (its fold of the markers topic), restoring an expired session
   * first: null for a session with no decision yet, 'rebuilding' while the store is.
   */
  async sessionState(ref: SessionRef): Promise<SessionPlanState | null | 'rebuilding'> {
    let loaded = await this.#plans.load([ref]);
    let session = loaded.ok ? [...loaded.sessions.values()][0]! : null;
    if (loaded.ok && session?.expired === true) {
      await this.restore(loaded.epoch, ref);
      loaded = await this.#plans.load([ref]);
      session = loaded.ok ? [...loaded.sessions.values()][0]! : null;
    }
    if (session === null) return 'rebuilding';
    return session.state === null ? null : (JSON.parse(session.state) as SessionPlanState);
  }

  /** The store as a resume reads it, restoring an expired session before it answers. */
  reader(): PlanReader {
    const plans = this.#plans;
    return {
      read: async (ref) => {
        const stored = await plans.read(ref);
        if (!stored.ok || !stored.expired) return stored;
        const epoch = await plans.epoch();
        if (epoch === null) return { ok: false, reason: 'no_epoch' };
        await this.restore(epoch, ref);
        return plans.read(ref);
      },
      recordContextHash: (ref, key, hash) => plans.recordContextHash(ref, key, hash),
    };
  }
}
