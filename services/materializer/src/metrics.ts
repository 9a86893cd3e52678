import { Counter, Gauge, Histogram, type Registry } from '@tidemark/service';
import type { DeadLetterReason } from '@tidemark/core';

type TurnOutcome = 'applied' | 'duplicate' | 'refused' | 'parked' | 'republished';

/** The materializer's metrics, registered on the host's registry. */
export interface MaterializerMetrics {
  turns(outcome: TurnOutcome, count: number): void;
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
  return {
    turns: (outcome, count) => {
      if (count > 0) turns.inc({ outcome }, count);
    },
    deadLetter: (reason) => deadLetters.inc({ reason }),
    applied: (seconds, count) => {
      latency.observe(seconds);
      batchSize.observe(count);
    },
    rebuildStarted: (reason) => rebuilds.inc({ reason }),
    rebuilding: (on) => rebuilding.set(on ? 1 : 0),
  };
}
