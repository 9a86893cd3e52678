import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The resume service's metrics, registered on the injected registry (one per process or per test). */
export interface ResumeMetrics {
  readonly resumes: Counter<'mode' | 'outcome'>;
  readonly latency: Histogram<'mode'>;
  readonly divergenceChecks: Counter<'result'>;
  readonly rawTurns: Histogram<'mode'>;
  readonly l0Records: Counter;
  readonly decisions: Counter<'type'>;
  readonly nodes: Counter;
  readonly conflicts: Counter<'reason'>;
  readonly restored: Counter;
  readonly contextCache: Counter<'result'>;
  readonly staleSessions: Gauge;
  /** What staleSessions sums at scrape time: each client's count of sessions it last found stale. */
  readonly staleSources: Set<() => number>;
  readonly consumerLag: Gauge;
  /** What consumerLag sums at scrape time: each worker's lag, asked of the broker (null: unknown). */
  readonly lagSources: Set<() => Promise<number | null>>;
}

const cache = new WeakMap<Registry, ResumeMetrics>();

export function resumeMetrics(registry: Registry): ResumeMetrics {
  const existing = cache.get(registry);
  if (existing !== undefined) return existing;
  const registers = [registry];
  const staleSources = new Set<() => number>();
  const lagSources = new Set<() => Promise<number | null>>();
  const metrics: ResumeMetrics = {
    resumes: new Counter({
      name: 'tidemark_resume_requests_total',
      help: 'Resumes served, by mode (digest, raw, none) and outcome (ok or the error code).',
      labelNames: ['mode', 'outcome'],
      registers,
    }),
    latency: new Histogram({
      name: 'tidemark_resume_latency_seconds',
      help: 'Time to assemble a resume context, by mode.',
      labelNames: ['mode'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    divergenceChecks: new Counter({
      name: 'tidemark_resume_divergence_checks_total',
      help: 'Contexts compared with the first context served for the same node and raw span: match or mismatch.',
      labelNames: ['result'],
      registers,
    }),
    rawTurns: new Histogram({
      name: 'tidemark_resume_raw_turns',
      help: 'Raw turns read from turns.l0 per resume, by mode.',
      labelNames: ['mode'],
      buckets: [0, 1, 10, 40, 100, 400, 1000, 4000, 10000],
      registers,
    }),
    l0Records: new Counter({
      name: 'tidemark_resume_l0_records_fetched_total',
      help: 'turns.l0 records fetched to read raw turns (each decoded, the session’s or not): against tidemark_resume_raw_turns, the reads’ amplification.',
      registers,
    }),
    decisions: new Counter({
      name: 'tidemark_resume_decisions_total',
      help: 'Marker decisions applied to resume plans, by type.',
      labelNames: ['type'],
      registers,
    }),
    nodes: new Counter({
      name: 'tidemark_resume_nodes_stored_total',
      help: 'Compaction nodes stored for resumes.',
      registers,
    }),
    restored: new Counter({
      name: 'tidemark_resume_restored_sessions_total',
      help: 'Sessions whose plans had expired (idle past STATE_RETENTION_MS), rebuilt from the markers and compactions topics when a decision arrived.',
      registers,
    }),
    conflicts: new Counter({
      name: 'tidemark_resume_plan_conflicts_total',
      help: 'Plan writes refused by the store (conflict: another worker moved the session; epoch: Redis lost).',
      labelNames: ['reason'],
      registers,
    }),
    contextCache: new Counter({
      name: 'tidemark_resume_context_cache_total',
      help: 'Resumes served from a context built before (hit) or built now (miss).',
      labelNames: ['result'],
      registers,
    }),
    staleSessions: new Gauge({
      name: 'tidemark_resume_stale_sessions',
      help: 'Sessions whose latest evaluation by this instance (a resume or status request in the last 15 minutes) found them stale: a due compaction undecided for longer than STALE_AFTER_MS.',
      registers,
      collect() {
        let count = 0;
        for (const source of staleSources) count += source();
        this.set(count);
      },
    }),
    staleSources,
    consumerLag: new Gauge({
      name: 'tidemark_resume_consumer_lag',
      help: 'Records of the markers and compactions topics the resume worker has not applied yet.',
      registers,
      async collect() {
        const lags = await Promise.all([...lagSources].map((lag) => lag().catch(() => null)));
        this.set(lags.reduce<number>((sum, lag) => sum + (lag ?? 0), 0));
      },
    }),
    lagSources,
  };
  cache.set(registry, metrics);
  return metrics;
}
