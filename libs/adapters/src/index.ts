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
export { ClaudeCodeConverter, fromClaudeCode, parseClaudeCodeLine, subprocessItemId } from './claude-code.js';
export {
  completeLines,
  contextIn,
  convertTranscript,
  problemsIn,
  pushLines,
  TranscriptError,
} from './formats.js';
export { fromAnthropic, type AnthropicTranscript } from './anthropic.js';
export { toAnthropic, type AnthropicBody } from './anthropic-resume.js';
export { checkAnthropic, type AnthropicBodyShape } from './check-anthropic.js';
export { fromOpenAIChat } from './openai-chat.js';
export { toOpenAIChat } from './openai-chat-resume.js';
export { checkOpenAIChat, checkOpenAIChatMessage } from './check-openai-chat.js';
export { fromOpenAIResponses } from './openai-responses.js';
export { toOpenAIResponses, type OpenAIResponsesBody } from './openai-responses-resume.js';
export { checkOpenAIResponses, type ResponsesCheckOptions } from './check-openai-responses.js';
export {
  anthropicLedgerTools,
  ledgerChanges,
  LedgerError,
  ledgerToolNames,
  ledgerTools,
  ledgerTurnId,
  openAIChatLedgerTools,
  openAIResponsesLedgerTools,
  type JsonSchema,
  type LedgerTool,
  type LedgerToolName,
} from './ledger.js';
