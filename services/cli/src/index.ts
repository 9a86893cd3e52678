// @tidemark/cli: the `tidemark` command, and the pieces the end-to-end tests drive directly.
export { tidemarkProgram, demoEnv, demoToken } from './commands.js';
export {
  dropDeployment,
  provision,
  startPipeline,
  waitUntilReady,
  type Env,
  type Pipeline,
  type PipelineOptions,
} from './pipeline.js';
export { runDemo, policyOverridesOf, type DemoOptions, type SessionOutcome } from './demo.js';
export { Journal, type SessionJournal } from './journal.js';
export { settle, referenceOf, decisionIdentity, type SessionRun, type Settled } from './settle.js';
export { formatSessionReport, describeDecision, describeResume, describeCompactions } from './format.js';
export {
  runFallbackReport,
  formatFallbackReport,
  type FallbackReport,
  type FallbackRow,
} from './fallback.js';
export { ingest, IngestError, type IngestOptions, type IngestResult } from './ingest.js';
