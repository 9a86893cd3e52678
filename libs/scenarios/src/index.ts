// @tidemark/scenarios: the demo sessions (fixture transcripts in test/fixtures/) and the workload
// generator, shared by the demo, the end-to-end tests and the fallback report.
export {
  expandTranscript,
  transcriptSchema,
  TranscriptError,
  type PolicyOverrides,
  type ScenarioSession,
  type Transcript,
} from './transcript.js';
export { fixturesDir, loadScenario, loadScenarios } from './load.js';
export {
  defaultWorkloadRates,
  fallbackFigures,
  generateWorkload,
  type FallbackFigures,
  type ResumeObservation,
  type WorkloadOptions,
} from './workload.js';
export {
  answerProbe,
  compressionOf,
  probeClasses,
  probeQuestions,
  type ProbeClass,
  type ProbeQuestion,
  type ProbeResult,
} from './probe.js';
