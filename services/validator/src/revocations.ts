import { decideRevocation, evolve, type MarkerDecision, type MarkerRevocation } from '@tidemark/core';
import { sessionKeyOf, type FrameLoad, type FrameWrite } from '@tidemark/state';
import { commitDecisions, loadFrames, type WriteAheadDeps } from './write-ahead.js';

// One fetched batch of revocations (one partition, offset order) becomes its decisions, on the same
// write-ahead path as a compaction's: load the sessions' frames, decide each revocation in order with
// core's session decider (decideRevocation, then evolve), then record, publish, confirm. A revocation is
// recorded under its own id, so a redelivered or repeated one (the same session and marker: the same id)
// re-publishes the recorded bytes or nothing at all.

export interface RevocationOutcome {
  /** Decisions published (a revocation of a marker not trusted, or revoked already, has none). */
  readonly published: number;
  /** Revocations seen before (a redelivery, or the same marker revoked again). */
  readonly repeated: number;
}

export async function decideRevocations(
  deps: WriteAheadDeps,
  revocations: readonly MarkerRevocation[],
): Promise<RevocationOutcome> {
  const sessions = new Map<string, { tenantId: string; sessionId: string; requests: MarkerRevocation[] }>();
  for (const request of revocations) {
    const { tenantId, sessionId } = request;
    const key = sessionKeyOf({ tenantId, sessionId });
    const entry = sessions.get(key) ?? { tenantId, sessionId, requests: [] };
    sessions.set(key, entry);
    entry.requests.push(request);
  }
  // The frame store records any decided command by its id: a revocation's is its revocationId.
  const loads: FrameLoad[] = [...sessions.values()].map(({ tenantId, sessionId, requests }) => ({
    tenantId,
    sessionId,
    compactionIds: [...new Set(requests.map((r) => r.revocationId))],
  }));
  const { epoch, sessions: loaded } = await loadFrames(deps, loads);

  const output: MarkerDecision[] = [];
  const writes: FrameWrite[] = [];
  let repeated = 0;
  for (const [key, { tenantId, sessionId, requests }] of sessions) {
    const session = loaded.get(key)!;
    let state = session.frame.state;
    const decided: FrameWrite['decided'][number][] = [];
    const seen = new Set<string>();
    for (const revocation of requests) {
      const recorded = session.decided.get(revocation.revocationId);
      if (seen.has(revocation.revocationId) || recorded !== undefined) {
        repeated++;
        // Recorded but not confirmed published (a crash between the two): the recorded bytes go again.
        if (recorded?.status === 'pending' && !seen.has(revocation.revocationId)) {
          output.push(...recorded.decisions);
        }
        seen.add(revocation.revocationId);
        continue;
      }
      seen.add(revocation.revocationId);
      const decisions = decideRevocation({ revocation }, state);
      state = decisions.reduce(evolve, state);
      decided.push({ compactionId: revocation.revocationId, decisions });
      output.push(...decisions);
      deps.logger.info(
        {
          revocationId: revocation.revocationId,
          markerId: revocation.markerId,
          requestedBy: revocation.requestedBy,
          outcome: decisions.length === 0 ? 'not_trusted' : 'revoked',
        },
        decisions.length === 0 ? 'revocation of a marker not trusted: nothing to decide' : 'marker revoked',
      );
    }
    if (decided.length > 0) writes.push({ tenantId, sessionId, guard: session.frame.guard, state, decided });
  }
  await commitDecisions(deps, epoch, writes, output, loads);
  return { published: output.length, repeated };
}
