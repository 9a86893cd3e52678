import { Counter, Histogram, type Registry } from '@tidemark/service';
import type { MarkerDecision } from '@tidemark/core';

// What an operator asks of the validator: how many markers it trusts and why it refuses the others,
// how long a compaction waits for its decision, and how often the materializer was not there in time.

/** immediate: covered when first read, no wait; the others: what a bounded wait ended with. */
export type WaitResult = 'immediate' | 'ok' | 'timeout' | 'broken' | 'rebuilding';

export interface ValidatorMetrics {
  decided(decision: MarkerDecision): void;
  /** Compaction record appended → decision appended, from the Kafka record timestamps. */
  latency(seconds: number): void;
  waited(result: WaitResult, seconds: number): void;
  redelivered(kind: 'published' | 'pending'): void;
  /** A batch redelivered because the projection had not reached its boundaries after the wait. */
  deferred(): void;
  rebuilt(sessions: number): void;
  /** Sessions whose expired frames were restored from the markers topic. */
  restored(sessions: number): void;
  batch(timing: BatchTiming, compactions: number): void;
}

/** Where one batch's time went, in seconds (what the decision latency is made of). */
export interface BatchTiming {
  /** From its oldest compaction's append to the batch's start: fetching, and waiting behind earlier batches. */
  readonly queued: number | null;
  /** Loading the frames of its sessions and reading the state at its boundaries (one round trip). */
  readonly load: number;
  /** Waiting for the watermarks of lagging sessions (and reading again), and deciding. */
  readonly decide: number;
  /** Recording and publishing its decisions (write-ahead; the confirmation is sent, not waited for). */
  readonly commit: number;
}

export function validatorMetrics(register: Registry): ValidatorMetrics {
  const registers = [register];
  const decisions = new Counter({
    name: 'tidemark_validator_decisions_total',
    help: 'Marker decisions published, by outcome (emitted, invalid) and cause (check, depth_change).',
    labelNames: ['outcome', 'cause'] as const,
    registers,
  });
  const violations = new Counter({
    name: 'tidemark_validator_violations_total',
    help: 'Violations in published MarkerInvalid decisions, by condition.',
    labelNames: ['condition'] as const,
    registers,
  });
  const latency = new Histogram({
    name: 'tidemark_validator_decision_latency_seconds',
    help: 'From the compaction record append to its decision append (Kafka record timestamps).',
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const waits = new Counter({
    name: 'tidemark_validator_watermark_waits_total',
    help: 'Session watermark checks, by result: immediate (covered when read), or a bounded wait that ended ok, timeout, broken or rebuilding.',
    labelNames: ['result'] as const,
    registers,
  });
  const waitSeconds = new Histogram({
    name: 'tidemark_validator_watermark_wait_seconds',
    help: 'How long a batch waited for the session watermarks it needed.',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const redeliveries = new Counter({
    name: 'tidemark_validator_redeliveries_total',
    help: 'Compactions seen again: already published (nothing sent) or recorded but unconfirmed (re-sent, same bytes).',
    labelNames: ['kind'] as const,
    registers,
  });
  const deferrals = new Counter({
    name: 'tidemark_validator_deferred_batches_total',
    help: 'Batches redelivered undecided because the projection had not reached their boundaries after the bounded wait (the materializer behind, or rebuilding).',
    registers,
  });
  const rebuilds = new Counter({
    name: 'tidemark_validator_rebuilds_total',
    help: 'Frame-store rebuilds from the markers topic (Redis lost it, or first start).',
    registers,
  });
  const rebuiltSessions = new Counter({
    name: 'tidemark_validator_rebuilt_sessions_total',
    help: 'Sessions restored by frame-store rebuilds.',
    registers,
  });
  const restoredSessions = new Counter({
    name: 'tidemark_validator_restored_sessions_total',
    help: 'Sessions whose frames had expired (idle past STATE_RETENTION_MS), restored from the markers topic when next needed.',
    registers,
  });
  const batches = new Histogram({
    name: 'tidemark_validator_batch_seconds',
    help: 'Time to decide and publish one fetched batch of compactions.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const phases = new Histogram({
    name: 'tidemark_validator_batch_phase_seconds',
    help: 'Where batch time goes: queued (oldest compaction append → batch start), load (frames and boundary states, read together), decide (watermark waits, deciding), commit (record, publish).',
    labelNames: ['phase'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const compactions = new Counter({
    name: 'tidemark_validator_compactions_total',
    help: 'Compaction records consumed.',
    registers,
  });

  return {
    decided(decision) {
      switch (decision.type) {
        case 'marker_emitted':
          decisions.inc({ outcome: 'emitted', cause: 'check' });
          return;
        case 'marker_invalid':
          decisions.inc({ outcome: 'invalid', cause: decision.cause });
          for (const violation of decision.violations) violations.inc({ condition: violation.condition });
          return;
        default: {
          const unknown: never = decision;
          throw new Error(`unknown decision ${String(unknown)}`);
        }
      }
    },
    latency(seconds) {
      latency.observe(Math.max(0, seconds));
    },
    waited(result, seconds) {
      waits.inc({ result });
      waitSeconds.observe(seconds);
    },
    redelivered(kind) {
      redeliveries.inc({ kind });
    },
    deferred() {
      deferrals.inc();
    },
    rebuilt(sessions) {
      rebuilds.inc();
      rebuiltSessions.inc(sessions);
    },
    restored(sessions) {
      restoredSessions.inc(sessions);
    },
    batch(timing, count) {
      batches.observe(timing.load + timing.decide + timing.commit);
      if (timing.queued !== null) phases.observe({ phase: 'queued' }, Math.max(0, timing.queued));
      phases.observe({ phase: 'load' }, timing.load);
      phases.observe({ phase: 'decide' }, timing.decide);
      phases.observe({ phase: 'commit' }, timing.commit);
      compactions.inc(count);
    },
  };
}
