import {
  defaultGeneratorRates,
  generateSession,
  type GeneratorRates,
  type ResumePlan,
  type TurnEvent,
} from '@tidemark/core';

// The workload behind the fallback report: many generated sessions with configurable rates of the
// events that make summaries lossy (rejections, failures, artifacts, calls running across a boundary).

export interface WorkloadOptions {
  readonly tenantId: string;
  /** How many sessions (default 50). */
  readonly sessions?: number;
  /** Turns per session (default 200). */
  readonly turns?: number;
  /** The first session's seed; session i uses seed + i (default 1). */
  readonly seed?: number;
  readonly rates?: Partial<GeneratorRates>;
}

export const defaultWorkloadRates: GeneratorRates = { ...defaultGeneratorRates, longCalls: 0.1 };

/** Deterministic: the same options give the same sessions, turn for turn. */
export function generateWorkload(options: WorkloadOptions): TurnEvent[][] {
  const count = options.sessions ?? 50;
  const seed = options.seed ?? 1;
  const rates = { ...defaultWorkloadRates, ...options.rates };
  return Array.from({ length: count }, (_, index) =>
    generateSession(seed + index, {
      tenantId: options.tenantId,
      sessionId: `workload-${String(index + 1).padStart(4, '0')}`,
      turns: options.turns ?? 200,
      rates,
    }),
  );
}

/** One session's outcome in the report: how it would resume, twice over. */
export interface ResumeObservation {
  readonly sessionId: string;
  readonly plan: ResumePlan;
  /** The contextHash of each of several independent resumes of the same plan. */
  readonly contextHashes: readonly string[];
  /** First-attempt markers whose check found lost or false state (closure, retention, artifacts, unverifiable). */
  readonly lossyAtFirstCheck: number;
  /** First-attempt markers whose check failed on depth alone (the frame had moved above them). */
  readonly belowFrameAtFirstCheck: number;
  /** First-attempt markers (nodes the summarizer wrote, repairs not counted). */
  readonly markers: number;
}

export interface FallbackFigures {
  readonly sessions: number;
  readonly digestResumes: number;
  readonly rawResumes: number;
  /** rawResumes / sessions. */
  readonly fallbackRate: number;
  /** Sessions whose repeated resumes did not all give one contextHash. Must be zero. */
  readonly divergentSessions: number;
  readonly markers: number;
  /** First-attempt markers whose check found lost or false state, over all first-attempt markers. */
  readonly lossyRate: number;
  /** First-attempt markers invalid for depth alone, over all first-attempt markers. */
  readonly belowFrameRate: number;
}

export function fallbackFigures(observations: readonly ResumeObservation[]): FallbackFigures {
  const raw = observations.filter((o) => o.plan.mode === 'raw').length;
  const markers = observations.reduce((sum, o) => sum + o.markers, 0);
  const lossy = observations.reduce((sum, o) => sum + o.lossyAtFirstCheck, 0);
  const below = observations.reduce((sum, o) => sum + o.belowFrameAtFirstCheck, 0);
  return {
    sessions: observations.length,
    digestResumes: observations.length - raw,
    rawResumes: raw,
    fallbackRate: observations.length === 0 ? 0 : raw / observations.length,
    divergentSessions: observations.filter((o) => new Set(o.contextHashes).size > 1).length,
    markers,
    lossyRate: markers === 0 ? 0 : lossy / markers,
    belowFrameRate: markers === 0 ? 0 : below / markers,
  };
}
