// @tidemark/cli: the `tidemark` command, and the pieces the end-to-end tests drive directly.
export { demoEnv } from './commands.js';
export {
  dropDeployment,
  provision,
  startPipeline,
  waitUntilReady,
  type Env,
  type Pipeline,
} from './pipeline.js';
export { runDemo, type SessionOutcome } from './demo.js';
export { Journal, type SessionJournal } from './journal.js';
export { decisionIdentity } from './settle.js';
export { ingest } from './ingest.js';
