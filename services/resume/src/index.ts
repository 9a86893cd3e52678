// @tidemark/resume: the resume worker (markers → a resume plan per session), the HTTP API and the
// in-process library agent runtimes resume with.
export { create, type ResumeDeps, type ResumeService } from './service.js';
export { tokensFromConfig } from './auth.js';
export { createResumeClient, type ResumeClientOptions, type ResumeLibraryClient } from './library.js';
export {
  ResumeUnavailableError,
  type ResumeClient,
  type ResumeOutcome,
  type ResumeRefusal,
  type ResumeResult,
  type SessionStatus,
  type StatusOutcome,
  type StatusRefusal,
} from './client.js';
export { type CompactionDue, type Staleness } from './stale.js';
export { policiesOf, resumeConfigSchema, type ResumeConfig } from './config.js';
export { hashToken, parseTokenList, readTokenFile, TokenVerifier, type TokenEntry } from './auth.js';
export { ResumeWorker } from './worker.js';
export {
  inFormat,
  isResumeFormat,
  resumeFormats,
  type ProviderResume,
  type ResumeFormat,
} from './formats.js';
