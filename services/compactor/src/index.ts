// @tidemark/compactor: turns.l0 into L1 summaries and L2+ digests, byte for byte what the core reference
// computes; strict repairs on MarkerInvalid; replay under a new policy as a new generation.
export { create, type Compactor, type CompactorDeps } from './compactor.js';
export { compactorConfigSchema, policiesOf, policyOf, type CompactorConfig } from './config.js';
export { namespaceOf } from './engine.js';
export { replay, type ReplayOptions, type ReplayResult } from './replay.js';
export { replayCommand } from './replay-command.js';
