// @tidemark/materializer: turns.l0 into the Redis projection, exact, idempotent and rebuildable.
export { materializerConfigSchema, type MaterializerConfig } from './config.js';
export {
  createMaterializer,
  type Materializer,
  type MaterializerDeps,
  type MaterializerState,
} from './materializer.js';
