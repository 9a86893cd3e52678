// @tidemark/state: Tidemark's Redis state, every store rebuildable from the topics (store-lifecycle.ts):
// the L0 projection (written by the materializer, read by the validator and the resume worker), the
// validator's frames, the resume plans and the compactor's windows. Each atomic transition is one Lua
// script under lua/, with a header naming its keys, arguments and replies; every key is built in keys.ts.
export { defaultMaxParkedTurns, Projection, type AlongsideRead } from './projection.js';
export type { ApplyOutcome, ReleasedTurn, StallChange } from './projection-apply.js';
export type { PositionedTurn } from './projection-plan.js';
export { StateError } from './errors.js';
export { batchOf, connectRedis, keySlot, unlinkMatching, type RedisClient } from './redis-client.js';
export { type SessionRef } from './keys.js';
export { withRebuildLock } from './store-lifecycle.js';
export { RebuildOwnership } from './rebuild-ownership.js';
export { WindowMovedError, WindowsLostError, WindowStore, type WindowUpdate } from './windows.js';
export { membershipOption } from './members.js';
export { PlanStore, type PlanWrite } from './plans.js';
export {
  FrameStore,
  sessionKeyOf,
  type FrameLoad,
  type FrameWrite,
  type LoadedSession,
  type RestoredSession,
} from './frames.js';
export { WatchStore } from './watches.js';
