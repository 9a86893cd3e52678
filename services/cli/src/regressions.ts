import type { SessionHistory } from '@tidemark/contract';
import type { RegressionDetected } from '@tidemark/core';

// Reading the regressions topic for one session: `tidemark inspect` lists them, the MCP server tells
// each new one to the agent once, as a warning beside its next tool call's answer.

/** The distinct regressions, in topic order (a redelivered turn publishes the same event again). */
export function distinctRegressions(events: readonly RegressionDetected[]): RegressionDetected[] {
  const seen = new Set<string>();
  return events.filter((event) => !seen.has(event.regressionId) && seen.add(event.regressionId));
}

/** The session's regressions not told yet by this tail (each once), read on from the last offset read. */
export function regressionTail(
  history: Pick<SessionHistory, 'read'>,
  ref: { readonly tenantId: string; readonly sessionId: string },
): () => Promise<RegressionDetected[]> {
  const told = new Set<string>();
  let from = 0;
  return async () => {
    const { records, end } = await history.read('regressions', ref, { from });
    from = end;
    const fresh = distinctRegressions(records.map((r) => r.value)).filter((r) => !told.has(r.regressionId));
    for (const r of fresh) told.add(r.regressionId);
    return fresh;
  };
}
