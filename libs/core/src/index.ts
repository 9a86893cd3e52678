// @tidemark/core: the pure, deterministic heart of Tidemark. No I/O: no Kafka, Redis, network or disk.

export type * from './model.js';
export {} from './wire/index.generated.js';

export {
  isRetriable,
  TidemarkCoreError,
  TidemarkError,
  type ContractErrorCode,
  type StateErrorCode,
} from './errors.js';
export { canonicalJson, canonicalJsonLength, compareText } from './canonical.js';
export {
  compactionIdOf,
  contextHashOf,
  markerIdOf,
  policyIdOf,
  revocationIdOf,
  sessionKey,
  sha256Hex,
  turnContentHash,
} from './ids.js';
export { estimateTokens, fitToBudget } from './tokens.js';

export { foldTurns, openedItem, SessionFold } from './fold.js';
export {
  conflictMessage,
  validateChange,
  validateTurn,
  type ApplyResult,
  type ChangeRejection,
  type ChangeRejectionReason,
} from './fold-checks.js';
export { boundaryQuery, check, type CheckOptions } from './check.js';

export { mergeClaims, summaryOf, summaryQuery } from './summarize/claims.js';
export { strictSummarizer, summarizeStrict } from './summarize/strict.js';
export { narrativeSummarizer, summarizeNarrative } from './summarize/narrative.js';
export {
  createModelSummarizer,
  fetchTransport,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
  type ChatTransport,
} from './summarize/model.js';
export { modelOutputSchema } from './summarize/model-output.js';
export { detailKey, fileWritten, rawTurnText } from './summarize/render.js';

export { defaultPolicy, definePolicy, planNext, priorNodeOf } from './plan.js';
export { parsePolicyOverrides, policiesFrom, type Policies } from './policies.js';
export { asStrict, buildCompaction, markerEmitted, markerInvalid, strictRepairOf } from './compaction.js';
export {
  advanceFrame,
  decide,
  decideRevocation,
  evolve,
  foldDecisions,
  frameOf,
  initialState,
  isRevoked,
  isVerdict,
  rawCheckpoint,
  repairable,
  resumePlan,
  trustedMarkers,
  type SessionFrameState,
} from './session-frame.js';
export { buildResumeContext, planNodeId, turnMessages } from './resume.js';
export {
  callSignature,
  disposedKeys,
  regressionDetected,
  regressionIdOf,
  regressionsIn,
  watchedSteps,
  type RegressionWatch,
  type WatchedStep,
} from './regression.js';

export { defaultGeneratorRates, generateSession, seededRandom, type GeneratorRates } from './generate.js';
export { runReference, type ReferenceRun } from './reference.js';
