import type { EventProducer } from '@tidemark/contract';
import {
  callSignature,
  regressionDetected,
  regressionsIn,
  sessionKey,
  type RegressionDetected,
  type TurnEvent,
} from '@tidemark/core';
import type { Logger } from '@tidemark/service';
import type { ApplyOutcome, WatchStore } from '@tidemark/state';
import type { MaterializerMetrics } from './metrics.js';

// The regression watch's other half (the resume service records the watch): after each applied batch,
// the items its turns open are matched against their sessions' watches, one Redis round trip for the
// batch, and each step started again is published as a RegressionDetected. A redelivered turn is looked
// at again and gives the same event (its id is content-derived); consumers keep the first.

export class RegressionWatcher {
  readonly #store: Pick<WatchStore, 'match'>;
  readonly #metrics: MaterializerMetrics;
  readonly #logger: Logger;

  constructor(store: Pick<WatchStore, 'match'>, metrics: MaterializerMetrics, logger: Logger) {
    this.#store = store;
    this.#metrics = metrics;
    this.#logger = logger;
  }

  async check(producer: EventProducer, outcomes: readonly ApplyOutcome[]): Promise<void> {
    const sessions = new Map<string, { turns: TurnEvent[]; signatures: Set<string> }>();
    for (const { turn, result, parked } of outcomes) {
      if (parked || !result.ok) continue;
      const opened = turn.changes.filter((change) => change.type === 'item_opened');
      if (opened.length === 0) continue;
      const key = sessionKey(turn.tenantId, turn.sessionId);
      const session = sessions.get(key) ?? { turns: [], signatures: new Set<string>() };
      sessions.set(key, session);
      session.turns.push(turn);
      for (const item of opened) session.signatures.add(callSignature(item));
    }
    if (sessions.size === 0) return;
    const matches = await this.#store.match(
      [...sessions.values()].map(({ turns, signatures }) => ({
        ref: { tenantId: turns[0]!.tenantId, sessionId: turns[0]!.sessionId },
        signatures: [...signatures],
      })),
    );
    const events: RegressionDetected[] = [];
    for (const [key, match] of matches) {
      for (const turn of sessions.get(key)!.turns) {
        for (const regression of regressionsIn(turn, match.watch, (s) => match.steps.get(s))) {
          events.push(regressionDetected(turn, regression, match.watch));
        }
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
