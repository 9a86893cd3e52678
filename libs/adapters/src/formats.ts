import { fromAnthropic } from './anthropic.js';
import { toAnthropic } from './anthropic-resume.js';
import { checkAnthropic } from './check-anthropic.js';
import { checkOpenAIChat } from './check-openai-chat.js';
import { checkOpenAIResponses } from './check-openai-responses.js';
import { TidemarkCoreError, TidemarkError } from '@tidemark/core';
import { ClaudeCodeConverter, linesOf } from './claude-code.js';
import { fromOpenAIChat } from './openai-chat.js';
import { toOpenAIChat } from './openai-chat-resume.js';
import { fromOpenAIResponses } from './openai-responses.js';
import { toOpenAIResponses } from './openai-responses-resume.js';
import type { Context, Conversion, ConvertOptions, InputFormat, OutputFormat } from './types.js';

// Every format by name, for callers that take the format as an argument (`tidemark ingest --format`,
// `GET …/resume?format=`): one switch each, so a new format is added in one place.

/** A transcript file's text (a JSON document, or JSONL for claude-code) that is not what its format reads. */
export class TranscriptError extends TidemarkError<'invalid_transcript'> {
  override readonly name: string = 'TranscriptError';
  constructor(
    message: string,
    /** The 1-based line of a JSONL transcript the problem is on, or null. */
    readonly line: number | null,
  ) {
    super('invalid_transcript', message);
  }
}

/**
 * Converts a transcript file's text. A JSONL transcript is read up to its last complete line (a line
 * still being written is left for later); a line that is not JSON is a TranscriptError naming it, and
 * nothing after it is converted (so its seqs stay where they belong once the line is fixed). A caller
 * that follows a growing file pushes only its new lines (`ClaudeCodeConverter`, `pushLines`).
 */
export function convertTranscript(format: InputFormat, text: string, options: ConvertOptions): Conversion {
  switch (format) {
    case 'claude-code': {
      const converter = new ClaudeCodeConverter(options);
      pushLines(converter, completeLines(text));
      return converter.conversion;
    }
    case 'openai-chat':
      return fromOpenAIChat(listIn(document(text), ['messages']), options);
    case 'openai-responses':
      return fromOpenAIResponses(listIn(document(text), ['input', 'output', 'items']), options);
    case 'anthropic': {
      const value = document(text);
      return fromAnthropic(Array.isArray(value) ? value : (value as { messages: unknown[] }), options);
    }
    default: {
      const never: never = format;
      throw new TranscriptError(`unknown format ${String(never)}`, null);
    }
  }
}

/** A resume context in a provider's format, with that format's own contextHash. */
export function contextIn(
  format: OutputFormat,
  context: Context,
): { readonly body: unknown; readonly contextHash: string } {
  switch (format) {
    case 'openai-chat':
      return toOpenAIChat(context);
    case 'openai-responses':
      return toOpenAIResponses(context);
    case 'anthropic':
      return toAnthropic(context);
    default: {
      const never: never = format;
      throw new TypeError(`unknown format ${String(never)}`);
    }
  }
}

/** What a provider would refuse in a body of its format (empty: valid). */
export function problemsIn(format: OutputFormat, body: unknown): string[] {
  switch (format) {
    case 'openai-chat':
      return checkOpenAIChat(body);
    case 'openai-responses':
      return checkOpenAIResponses(body);
    case 'anthropic':
      return checkAnthropic(body as never);
    default: {
      const never: never = format;
      throw new TypeError(`unknown format ${String(never)}`);
    }
  }
}

/** The complete lines of a JSONL text: a last line without its newline is still being written. */
export function completeLines(text: string): string[] {
  return linesOf(text.slice(0, text.lastIndexOf('\n') + 1));
}

/** Pushes lines into a converter; a line that is not JSON is a TranscriptError naming it. */
export function pushLines(converter: ClaudeCodeConverter, lines: readonly string[]): void {
  for (const line of lines) {
    try {
      converter.push(line);
    } catch (error) {
      if (!(error instanceof TidemarkCoreError)) throw error;
      const at = converter.lines + 1;
      throw new TranscriptError(`line ${at}: not valid JSON`, at);
    }
  }
}

function document(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new TranscriptError(`not a JSON document: ${(error as Error).message}`, null);
  }
}

/** The list a JSON transcript holds: the document itself, or its first list-valued field of these. */
function listIn(value: unknown, fields: readonly string[]): unknown[] {
  if (Array.isArray(value)) return value;
  if (typeof value === 'object' && value !== null) {
    for (const field of fields) {
      const list = (value as Record<string, unknown>)[field];
      if (Array.isArray(list)) return list;
    }
  }
  throw new TranscriptError(`expected a JSON array, or an object with ${fields.join(' or ')}`, null);
}
