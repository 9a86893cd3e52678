// @tidemark/adapters: agent runtimes in, model APIs out. Pure: no I/O.
//   from<Format>(transcript, { tenantId, sessionId }) → { turns: TurnEvent[], skipped }
//   to<Format>(resumeContext) → a request body part the provider accepts
// The mapping of each format is documented in README.md.

export {
  inputFormats,
  outputFormats,
  type Context,
  type Conversion,
  type ConvertOptions,
  type InputFormat,
  type OutputFormat,
  type SessionRef,
  type Skipped,
} from './types.js';
export { argumentsDetail, contentDigest, TurnBuilder } from './turns.js';
