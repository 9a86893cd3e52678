import type { EventProducer } from '@tidemark/contract';
import {
  callSignature,
  regressionDetected,
  regressionsIn,
  sessionKey,
  type RegressionDetected,
  type RegressionWatch,
  type TurnEvent,
} from '@tidemark/core';
import type { Logger } from '@tidemark/service';
import type { AlongsideRead, ApplyOutcome, SessionRef, WatchStore } from '@tidemark/state';
import type { MaterializerMetrics } from './metrics.js';

// The regression watch's other half (the resume service records the watch): whether the sessions whose
// turns open items have a watch is read in the apply's own round trip (after the apply, see
// Projection.applyBatchInEpoch); only for a session someone resumed are its new items' signatures
// computed and its watched steps read (one more round trip, for batches that have such a session). Each
// step an applied turn starts again that was ruled out before the resume's boundary is published as a
// RegressionDetected. A redelivered turn is looked at again and gives the same event (its id is
// content-derived); consumers keep the first.

type Watches = Pick<WatchStore, 'watching' | 'steps'>;

export class RegressionWatcher {
  readonly #store: Watches;
  readonly #metrics: MaterializerMetrics;
  readonly #logger: Logger;

  constructor(store: Watches, metrics: MaterializerMetrics, logger: Logger) {
    this.#store = store;
    this.#metrics = metrics;
    this.#logger = logger;
  }

  /** The read to send with the batch's apply: the watches of the sessions whose turns open items. */
  watching(turns: readonly TurnEvent[]): AlongsideRead<Map<string, RegressionWatch>> {
    const sessions = new Map<string, SessionRef>();
    for (const { tenantId, sessionId, changes } of turns) {
      if (!changes.some((change) => change.type === 'item_opened')) continue;
      sessions.set(sessionKey(tenantId, sessionId), { tenantId, sessionId });
    }
    return this.#store.watching([...sessions.values()]);
  }

  /** Publishes the regressions of the batch's applied turns in the sessions that have a watch. */
  async publish(
    producer: EventProducer,
    outcomes: readonly ApplyOutcome[],
    watches: ReadonlyMap<string, RegressionWatch>,
  ): Promise<void> {
    if (watches.size === 0) return;
    const watched = outcomes.filter(
      ({ turn, result, parked }) =>
        !parked && result.ok && watches.has(sessionKey(turn.tenantId, turn.sessionId)),
    );
    const signatures = new Map<string, { ref: SessionRef; signatures: Set<string> }>();
    for (const { turn } of watched) {
      const key = sessionKey(turn.tenantId, turn.sessionId);
      const session = signatures.get(key) ?? { ref: turn, signatures: new Set<string>() };
      signatures.set(key, session);
      for (const change of turn.changes) {
        if (change.type === 'item_opened') session.signatures.add(callSignature(change));
      }
    }
    const steps = await this.#store.steps(
      [...signatures.values()].map(({ ref, signatures }) => ({
        ref: { tenantId: ref.tenantId, sessionId: ref.sessionId },
        signatures: [...signatures],
      })),
    );
    const events: RegressionDetected[] = [];
    for (const { turn } of watched) {
      const key = sessionKey(turn.tenantId, turn.sessionId);
      const known = steps.get(key);
      if (known === undefined) continue;
      const watch = watches.get(key)!;
      for (const regression of regressionsIn(turn, watch, (s) => known.get(s))) {
        events.push(regressionDetected(turn, regression, watch));
      }
    }
    if (events.length === 0) return;
    await producer.send('regressions', events);
    for (const event of events) {
      this.#metrics.regression(event.ruledOut);
      const { tenantId, sessionId, seq, priorSeq, name, ruledOut } = event;
      this.#logger.warn(
        { tenantId, sessionId, seq, priorSeq, name, ruledOut },
        `regression: turn ${seq} starts again ${name}, ${ruledOut} at turn ${priorSeq}`,
      );
    }
  }
}
