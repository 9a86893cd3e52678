// @tidemark/state: Tidemark's Redis state, every store rebuildable from the topics (store-lifecycle.ts):
// the L0 projection (written by the materializer, read by the validator and the resume worker), the
// validator's frames, the resume plans and the compactor's windows. Each atomic transition is one Lua
// script under lua/, with a header naming its keys, arguments and replies; every key is built in keys.ts.
export {
  Projection,
  type EpochApply,
  type ProjectionOptions,
  type RebuildMark,
  type WaitOutcome,
} from './projection.js';
export type { ApplyOutcome, PositionedTurn } from './projection-apply.js';
export type { BrokenMark, L0Position, Watermark } from './projection-read.js';
export { StateError, type StateErrorCode } from './errors.js';
export { sessionTag, type SessionRef } from './keys.js';
export { StoreLifecycle, withRebuildLock, type RebuildLockOptions } from './store-lifecycle.js';
export {
  WindowMovedError,
  WindowsLostError,
  WindowStore,
  type LoadedWindows,
  type WindowUpdate,
} from './windows.js';
export {
  PlanStore,
  planNodeId,
  type LoadedPlanSession,
  type PlanRead,
  type PlansCommitted,
  type PlansLoaded,
  type PlanWrite,
} from './plans.js';
export {
  FrameStore,
  sessionKeyOf,
  type DecidedRecord,
  type FrameGuard,
  type FrameLoad,
  type FramesLoaded,
  type FramesRecorded,
  type FrameWrite,
  type LoadedSession,
  type RestoredSession,
  type SessionFrame,
} from './frames.js';
