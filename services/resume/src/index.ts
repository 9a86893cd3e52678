// @tidemark/resume: the resume worker (markers → a resume plan per session), the HTTP API and the
// in-process library agent runtimes resume with.
export { create, type ResumeService } from './service.js';
export { createResumeClient, type ResumeLibraryClient } from './library.js';
export { type ResumeOutcome } from './outcomes.js';
export { policiesOf, resumeConfigSchema } from './config.js';
export { hashToken } from './auth.js';
export {
  inFormat,
  isResumeFormat,
  resumeFormats,
  type ProviderResume,
  type ResumeFormat,
} from './formats.js';
