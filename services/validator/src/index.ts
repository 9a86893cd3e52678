// @tidemark/validator: every compaction becomes exactly one MarkerEmitted or MarkerInvalid, at
// compaction time, against the materialized state; the service owns each session's frame.
export { createValidator, type Validator, type ValidatorDeps } from './validator.js';
export { validatorConfigSchema, type ValidatorConfig } from './config.js';
export {
  decideCompaction,
  emptyFrameState,
  isVerdict,
  missingState,
  replayDecisions,
  trustAfter,
  type CompactionDecision,
  type FrameState,
} from './decide.js';
export { decideBatch, type BatchDeps, type BatchInput, type ProjectionReader } from './batch.js';
export { restoredSessions } from './rebuild.js';
