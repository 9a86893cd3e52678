import { fromAnthropic, toAnthropic } from './anthropic.js';
import { checkAnthropic } from './check-anthropic.js';
import { checkOpenAIChat } from './check-openai-chat.js';
import { checkOpenAIResponses } from './check-openai-responses.js';
import { fromClaudeCode } from './claude-code.js';
import { fromOpenAIChat, toOpenAIChat } from './openai-chat.js';
import { fromOpenAIResponses } from './openai-responses.js';
import { toOpenAIResponses } from './openai-responses-resume.js';
import type { Context, Conversion, ConvertOptions, InputFormat, OutputFormat } from './types.js';

// Every format by name, for callers that take the format as an argument (`tidemark ingest --format`,
// `GET …/resume?format=`): one switch each, so a new format is added in one place.

/** A transcript file's text (a JSON document, or JSONL for claude-code) that is not what its format reads. */
export class TranscriptError extends Error {
  override readonly name = 'TranscriptError';
  constructor(
    message: string,
    /** The 1-based line of a JSONL transcript the problem is on, or null. */
    readonly line: number | null,
  ) {
    super(message);
  }
}

/**
 * Converts a transcript file's text. A JSONL transcript is read up to its last complete line (a line
 * still being written is left for later); a line that is not JSON is a TranscriptError naming it, and
 * nothing after it is converted (so its seqs stay where they belong once the line is fixed).
 */
export function convertTranscript(format: InputFormat, text: string, options: ConvertOptions): Conversion {
  switch (format) {
    case 'claude-code': {
      const complete = text.slice(0, text.lastIndexOf('\n') + 1);
      const lines = complete.split('\n');
      const bad = lines.findIndex((line) => line.trim() !== '' && !parses(line));
      if (bad >= 0) throw new TranscriptError(`line ${bad + 1}: not valid JSON`, bad + 1);
      return fromClaudeCode(complete, options);
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

function parses(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
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
