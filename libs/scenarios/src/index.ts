// @tidemark/scenarios: the demo sessions (fixture transcripts in test/fixtures/) and the workload
// generator, shared by the demo, the end-to-end tests and the fallback report.
export { expandTranscript, TranscriptError, type ScenarioSession } from './transcript.js';
export { loadScenario, loadScenarios } from './load.js';
export { fallbackFigures, generateWorkload, type FallbackFigures, type WorkloadOptions } from './workload.js';
export { compressionTarget, probeClasses, probeResume, type ProbeClass, type ProbedResume } from './probe.js';
