import { Counter, Gauge, Histogram, type Registry } from '@tidemark/service';
import type { DeadLetterReason, RuledOut } from '@tidemark/core';
import type { ApplyOutcome } from '@tidemark/state';

type TurnOutcome = 'applied' | 'duplicate' | 'refused' | 'parked' | 'republished';

/** The materializer's metrics, registered on the host's registry. */
export interface MaterializerMetrics {
  turns(outcome: TurnOutcome, count: number): void;
  /** Counts a batch's turns by outcome: applied, duplicate, refused or parked. */
  outcomes(outcomes: readonly ApplyOutcome[]): void;
  /** RegressionDetected events published, by how the repeated step had been ruled out. */
  regression(ruledOut: RuledOut): void;
  deadLetter(reason: DeadLetterReason): void;
  /** Seconds one batch took to apply (the Redis round trip and the dead letters). */
  applied(seconds: number, turns: number): void;
  rebuildStarted(reason: string): void;
  rebuilding(on: boolean): void;
}

export function materializerMetrics(
  register: Registry,
  lag: () => Promise<number | null>,
  stalledSessions: () => Promise<number>,
): MaterializerMetrics {
  const turns = new Counter({
    name: 'tidemark_materializer_turns_total',
    help: 'Turns read from turns.l0, by outcome: applied, duplicate (a redelivery, a no-op), refused, parked (early: held until the turn before it comes), or republished (parked turns published again once it came).',
    labelNames: ['outcome'],
    registers: [register],
  });
  const deadLetters = new Counter({
    name: 'tidemark_materializer_deadletters_total',
    help: 'Dead letters published, by reason code (refused turns, skipped changes, undecodable records).',
    labelNames: ['reason'],
    registers: [register],
  });
  const latency = new Histogram({
    name: 'tidemark_materializer_apply_seconds',
    help: 'Time to apply one batch: the projection round trip plus its dead letters.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [register],
  });
  const batchSize = new Histogram({
    name: 'tidemark_materializer_batch_turns',
    help: 'Turns per applied batch.',
    buckets: [1, 10, 50, 100, 250, 500, 1000, 2500],
    registers: [register],
  });
  new Gauge({
    name: 'tidemark_materializer_consumer_lag',
    help: 'Records of turns.l0 not yet committed by the materializer group.',
    registers: [register],
    async collect() {
      const value = await lag().catch(() => null);
      if (value !== null) this.set(value);
    },
  });
  new Gauge({
    name: 'tidemark_materializer_stalled_sessions',
    help: 'Sessions waiting for a turn past their watermark that is not at hand (missing before parked turns, or refused), over the whole projection: every instance reports the same count.',
    registers: [register],
    async collect() {
      const value = await stalledSessions().catch(() => null);
      if (value !== null) this.set(value);
    },
  });
  const regressions = new Counter({
    name: 'tidemark_materializer_regressions_total',
    help: 'RegressionDetected events published: a resumed agent started again a step ruled out before its resume boundary, by how it had been ruled out (failed, rejected, superseded).',
    labelNames: ['ruled_out'],
    registers: [register],
  });
  const rebuilds = new Counter({
    name: 'tidemark_materializer_rebuilds_total',
    help: 'Rebuilds of the projection from L0, by reason.',
    labelNames: ['reason'],
    registers: [register],
  });
  const rebuilding = new Gauge({
    name: 'tidemark_materializer_rebuilding',
    help: '1 while the projection is being rebuilt from L0.',
    registers: [register],
  });
  const count = (outcome: TurnOutcome, n: number) => {
    if (n > 0) turns.inc({ outcome }, n);
  };
  return {
    turns: count,
    outcomes: (outcomes) => {
      const counts = { applied: 0, duplicate: 0, refused: 0, parked: 0 };
      for (const { result, parked } of outcomes) {
        if (parked) counts.parked++;
        else if (!result.ok) counts.refused++;
        else if (result.duplicate) counts.duplicate++;
        else counts.applied++;
      }
      for (const [outcome, n] of Object.entries(counts)) count(outcome as TurnOutcome, n);
    },
    regression: (ruledOut) => regressions.inc({ ruled_out: ruledOut }),
    deadLetter: (reason) => deadLetters.inc({ reason }),
    applied: (seconds, count) => {
      latency.observe(seconds);
      batchSize.observe(count);
    },
    rebuildStarted: (reason) => rebuilds.inc({ reason }),
    rebuilding: (on) => rebuilding.set(on ? 1 : 0),
  };
}
