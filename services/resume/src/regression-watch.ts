import {
  disposedKeys,
  planNodeId,
  sessionKey,
  watchedSteps,
  type BoundaryQuery,
  type RegressionWatch,
  type ResumePlan,
  type StateAtBoundary,
  type WatchedStep,
} from '@tidemark/core';
import type { SessionRef } from '@tidemark/state';

// After a resume, what the materializer watches the agent's next turns for (core regression.ts): the
// steps ruled out up to the boundary the resume's summary covered, read from the projection (the log,
// never the summary), stored with the boundary and the last turn the context held.

export interface WatchRecorderDeps {
  readonly projection: { stateAt(query: BoundaryQuery): Promise<StateAtBoundary> };
  readonly store: {
    put(ref: SessionRef, watch: RegressionWatch, steps: readonly WatchedStep[]): Promise<void>;
  };
}

/** Records the watch a resume of `plan` leaves, its context holding turns up to `resumedAtSeq`. */
export type WatchRecorder = (plan: ResumePlan, resumedAtSeq: number) => Promise<void>;

/** Sessions whose last recorded watch this process remembers (so the same resume again writes nothing). */
const rememberedSessions = 10_000;

export function createWatchRecorder(deps: WatchRecorderDeps): WatchRecorder {
  // A watch is a function of the plan's node and boundary and the last turn the context held (the log up
  // to the boundary never changes): the same resume again has nothing new to record.
  const recorded = new Map<string, string>();
  return async (plan, resumedAtSeq) => {
    const ref = { tenantId: plan.tenantId, sessionId: plan.sessionId };
    // The summary covers 1..rawFromSeq-1, whether a trusted digest or a raw checkpoint: what was ruled
    // out in it reaches the agent only through the summary. From the session start, nothing does.
    const watch: RegressionWatch = {
      nodeId: planNodeId(plan),
      boundarySeq: plan.rawFromSeq - 1,
      resumedAtSeq,
    };
    const session = sessionKey(ref.tenantId, ref.sessionId);
    const identity = JSON.stringify(watch);
    if (recorded.get(session) === identity) return;
    if (watch.boundarySeq === 0) {
      await deps.store.put(ref, watch, []);
    } else {
      const query = { ...ref, fromSeq: 1, toSeq: watch.boundarySeq, itemIds: [], itemKeys: [], paths: [] };
      const span = await deps.projection.stateAt(query);
      const keys = disposedKeys(span);
      const state = keys.length === 0 ? span : await deps.projection.stateAt({ ...query, itemIds: keys });
      await deps.store.put(ref, watch, watchedSteps(state));
    }
    recorded.delete(session);
    recorded.set(session, identity);
    if (recorded.size > rememberedSessions) recorded.delete(recorded.keys().next().value!);
  };
}
