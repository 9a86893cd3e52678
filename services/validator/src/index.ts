// @tidemark/validator: every compaction becomes exactly one MarkerEmitted or MarkerInvalid, at
// compaction time, against the materialized state, by core's session decider; the service keeps each
// session's decider state.
export { create, type Validator, type ValidatorDeps } from './validator.js';
export { validatorConfigSchema } from './config.js';
export { decideBatch, type ProjectionReader } from './batch.js';
export { restoredSessions } from './rebuild.js';
