// @tidemark/state: Tidemark's Redis state. The L0 projection (written by the materializer, read by the
// validator and the resume worker), each atomic transition one Lua script under lua/.
export {
  Projection,
  type ApplyOutcome,
  type BrokenMark,
  type EpochApply,
  type L0Position,
  type PositionedTurn,
  type ProjectionOptions,
  type RebuildMark,
  type WaitOutcome,
  type Watermark,
} from './projection.js';
export { StateError, type StateErrorCode } from './errors.js';
export { escapeGlob, sessionTag } from './keys.js';
export {
  PlanStore,
  planNodeId,
  type LoadedPlanSession,
  type PlanRead,
  type PlanSessionRef,
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
  type SessionRef,
} from './frames.js';
