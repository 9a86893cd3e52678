import { Counter, Gauge, Histogram, type Registry } from '@tidemark/service';

// The compactor's Prometheus metrics (served on /metrics by the service host).

export interface EngineMetrics {
  readonly compactions: Counter<'tier' | 'kind'>;
  readonly summarizerSeconds: Histogram<'tier'>;
  readonly windows: Gauge;
  readonly turns: Counter<'admission'>;
  readonly stateUnavailable: Counter<'reason'>;
  readonly windowsRestored: Counter;
}

export function engineMetrics(register: Registry): EngineMetrics {
  const registers = [register];
  return {
    compactions: new Counter({
      name: 'tidemark_compactor_compactions_total',
      help: 'Compactions published, by tier and kind (first attempt, or the strict repair published after a lossy one).',
      labelNames: ['tier', 'kind'],
      registers,
    }),
    summarizerSeconds: new Histogram({
      name: 'tidemark_compactor_summarizer_seconds',
      help: 'Time a summarizer took for one node, by tier.',
      labelNames: ['tier'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    }),
    windows: new Gauge({
      name: 'tidemark_compactor_windows',
      help: 'Sessions whose window holds uncompacted turns (of those this process has seen).',
      registers,
    }),
    turns: new Counter({
      name: 'tidemark_compactor_turns_total',
      help: 'Turns read, by admission (accepted, duplicate, gap, invalid).',
      labelNames: ['admission'],
      registers,
    }),
    stateUnavailable: new Counter({
      name: 'tidemark_compactor_state_unavailable_total',
      help: 'Compactions that could not read the materialized state in time, by reason.',
      labelNames: ['reason'],
      registers,
    }),
    windowsRestored: new Counter({
      name: 'tidemark_compactor_windows_restored_total',
      help: 'Windows rebuilt from turns.l0 because they had expired (the session was idle past STATE_RETENTION_MS).',
      registers,
    }),
  };
}
