// @tidemark/core: the pure, deterministic heart of Tidemark. No I/O: no Kafka, Redis, network or disk.

export type * from './model.js';
export {
  ArtifactActionSymbols,
  DeadLetterReasonSymbols,
  DispositionSymbols,
  InvalidationCauseSymbols,
  ItemKindSymbols,
  ItemOutcomeSymbols,
  TurnRoleSymbols,
  ViolationConditionSymbols,
} from './wire.generated.js';

export {
  isRetriable,
  TidemarkCoreError,
  TidemarkError,
  type ContractErrorCode,
  type CoreErrorCode,
  type InputErrorCode,
  type ServiceErrorCode,
  type StateErrorCode,
  type TidemarkErrorCode,
  type TidemarkErrorOptions,
} from './errors.js';
export { canonicalJson, compareText } from './canonical.js';
export { sha256, sha256Hex } from './sha256.js';
export {
  compactionIdOf,
  contextHashOf,
  markerIdOf,
  policyIdOf,
  sessionKey,
  type CompactionIdentity,
} from './ids.js';
export { estimateTokens, fitToBudget } from './tokens.js';

export {
  foldTurns,
  SessionFold,
  validateChange,
  validateTurn,
  type ApplyResult,
  type ChangeRejection,
  type ChangeRejectionReason,
  type TurnRefusalReason,
  type TurnValidation,
} from './fold.js';
export { boundaryQuery, check, conditionOrder, type CheckCandidate, type CheckOptions } from './check.js';

export {
  carryForward,
  claimsFromState,
  emptyClaims,
  mergeClaims,
  normalizeClaims,
  summaryOf,
  summaryQuery,
} from './summarize/claims.js';
export { strictSummarizer, summarizeStrict } from './summarize/strict.js';
export { narrativeSummarizer, summarizeNarrative } from './summarize/narrative.js';
export {
  chatRequestFor,
  createModelSummarizer,
  fetchTransport,
  parseChatResponse,
  parseClaims,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
  type ChatTransport,
  type FetchLike,
  type ModelSummarizerConfig,
} from './summarize/model.js';
export { rawTurnText, stateBlock } from './summarize/render.js';

export { defaultPolicy, definePolicy, planNext, priorNodeOf } from './plan.js';
export { parsePolicyOverrides, policiesFrom, type Policies } from './policies.js';
export {
  asStrict,
  buildCompaction,
  markerEmitted,
  markerInvalid,
  strictRepairOf,
  summaryOfNode,
  type CompactionInput,
} from './compaction.js';
export {
  advanceFrame,
  decide,
  evolve,
  foldDecisions,
  frameOf,
  framing,
  initialState,
  isVerdict,
  rawCheckpoint,
  repairable,
  resumePlan,
  trustedMarkers,
  type DecideCompaction,
  type GenerationFrame,
  type SessionFrameState,
  type Slot,
} from './session-frame.js';
export { buildResumeContext, planNodeId } from './resume.js';

export {
  defaultGeneratorRates,
  generateSession,
  seededRandom,
  type GeneratorRates,
  type SessionGeneratorOptions,
} from './generate.js';
export { runReference, type ReferenceOptions, type ReferenceRun } from './reference.js';
