// @tidemark/compactor: turns.l0 into L1 summaries and L2+ digests, byte for byte what the core reference
// computes; strict repairs on MarkerInvalid; replay under a new policy as a new generation.
export { create } from './compactor.js';
export { compactorConfigSchema } from './config.js';
export { replay, replayTarget } from './replay.js';
export { replayCommand } from './replay-command.js';
