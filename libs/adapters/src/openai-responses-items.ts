import { canonicalJson, type ItemKind } from '@tidemark/core';
import type { ResponseFunctionShellCallOutputContent } from 'openai/resources/responses/responses';
import { answerOf, type OutputType } from './check-openai-responses.js';
import { isRecord, parseJson, text, type JsonRecord } from './json.js';
import { argumentsDetail } from './turns.js';

// The item shapes both directions of the OpenAI Responses adapter read (openai-responses.ts reads a
// transcript, openai-responses-resume.ts and openai-responses-given-back.ts write a request body):
// calls and outputs as views, and the small readers of Responses values they share (generic JSON
// readers are in json.ts).

/** A Responses item (or a part of one) as a transcript holds it. */
export type Item = JsonRecord;

// ---------------------------------------------------------------------------------------------------
// Calls and outputs, as both directions read them

export interface CallView {
  readonly callId: string;
  readonly kind: ItemKind;
  /** ItemOpened.name: the tool, or the command of a shell call. */
  readonly itemName: string;
  readonly detail: string | null;
  /** The call as a turn's text: `name(args)`. */
  readonly rendered: string;
  /** Shorter, for restating a call whose result is not in a context. */
  readonly summary: string;
  /** Why the call itself says it failed, or null. */
  readonly failure: string | null;
}

export function callView(item: Item): CallView | null {
  const callId = text(item.call_id);
  if (callId === null) return null;
  const failure = item.status === 'incomplete' ? 'call status incomplete' : null;
  const tool = (itemName: string, args: string, detail: unknown): CallView => ({
    callId,
    kind: 'tool_call',
    itemName,
    detail: argumentsDetail(detail),
    rendered: `${itemName}(${args})`,
    summary: `${itemName}(${args})`,
    failure,
  });
  const shell = (command: string, tool: string): CallView => ({
    callId,
    kind: 'subprocess',
    itemName: command,
    detail: argumentsDetail(item.action),
    rendered: `${tool}(${command})`,
    summary: `${tool}(${command})`,
    failure,
  });
  const action = isRecord(item.action) ? item.action : {};
  switch (item.type) {
    case 'function_call': {
      const name = text(item.name);
      return name === null ? null : tool(name, argumentsText(item.arguments), item.arguments);
    }
    case 'custom_tool_call': {
      const name = text(item.name);
      return name === null ? null : tool(name, argumentsText(item.input), item.input);
    }
    case 'local_shell_call': {
      const command = strings(action.command);
      return command === null ? null : shell(command.join(' '), 'local_shell');
    }
    case 'shell_call': {
      const commands = strings(action.commands);
      return commands === null ? null : shell(commands.join('; '), 'shell');
    }
    case 'apply_patch_call': {
      const operation = isRecord(item.operation) ? item.operation : {};
      const target = `${String(operation.type)} ${String(operation.path)}`;
      const diff = text(operation.diff);
      return {
        ...tool('apply_patch', target, item.operation),
        rendered: diff === null ? `apply_patch(${target})` : `apply_patch(${target})\n${diff}`,
      };
    }
    default:
      return null;
  }
}

export interface OutputView {
  readonly type: OutputType;
  readonly callId: string;
  readonly text: string;
  /** Why the output says the call failed, or null. */
  readonly failure: string | null;
}

export function outputView(item: Item): OutputView | null {
  const answer = answerOf(item);
  if (answer === null) return null;
  const incomplete = item.status === 'incomplete' ? 'output status incomplete' : null;
  const view = (output: string, failure: string | null): OutputView => ({ ...answer, text: output, failure });
  switch (answer.type) {
    case 'function_call_output':
    case 'custom_tool_call_output':
      return view(toolOutputText(item.output), incomplete);
    case 'local_shell_call_output': {
      const output = str(item.output);
      const exit = exitCodeIn(output);
      return view(output, incomplete ?? (exit !== null && exit !== 0 ? `exit code ${exit}` : null));
    }
    case 'shell_call_output': {
      const chunks = Array.isArray(item.output) ? (item.output as readonly unknown[]).filter(isRecord) : [];
      return view(
        chunks.map(shellChunkText).join('\n'),
        incomplete ?? chunks.map(shellFailure).find(Boolean) ?? null,
      );
    }
    case 'apply_patch_call_output':
      return view(
        text(item.output) ?? `apply_patch ${String(item.status)}`,
        item.status === 'failed' ? 'apply_patch failed' : null,
      );
    default: {
      const never: never = answer.type;
      throw new TypeError(`unknown output type ${String(never)}`);
    }
  }
}

function shellChunkText(chunk: Item): string {
  return [text(chunk.stdout), text(chunk.stderr)].filter((part) => part !== null).join('\n');
}

function shellFailure(chunk: Item): string | null {
  const outcome = isRecord(chunk.outcome) ? chunk.outcome : {};
  if (outcome.type === 'timeout') return 'timeout';
  return typeof outcome.exit_code === 'number' && outcome.exit_code !== 0
    ? `exit code ${outcome.exit_code}`
    : null;
}

/**
 * The exit code a local shell output carries: it is "a JSON string of the output"; Codex writes
 * `{output, metadata: {exit_code}}`, others `{exit_code}`. Null when it carries none.
 */
function exitCodeIn(output: string): number | null {
  const parsed = parseJson(output);
  if (!isRecord(parsed)) return null;
  const metadata = isRecord(parsed.metadata) ? parsed.metadata : {};
  const code = parsed.exit_code ?? metadata.exit_code;
  return typeof code === 'number' ? code : null;
}

export function approvalText(requestId: string, approve: boolean, reason: string | null): string {
  return `[approval ${approve ? 'granted' : 'denied'}] ${requestId}${reason === null ? '' : `: ${reason}`}`;
}

// ---------------------------------------------------------------------------------------------------
// Reading Responses values

/** An item's type; a message may leave it out (EasyInputMessage). Empty when there is none. */
export function itemType(item: Item): string {
  if (typeof item.type === 'string') return item.type;
  return item.type === undefined && item.role !== undefined ? 'message' : '';
}

/** A string field, or empty. */
export function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Arguments as the model wrote them: a string as it is, anything else as canonical JSON. */
export function argumentsText(value: unknown): string {
  return value === undefined || value === null || typeof value === 'string'
    ? str(value)
    : canonicalJson(value);
}

export function strings(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const list = value as readonly unknown[];
  return list.every((v) => typeof v === 'string') ? [...list] : null;
}

export function stringRecord(value: Item): Record<string, string> {
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

export function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' ? value : null;
}

export function callStatus(value: unknown): 'in_progress' | 'completed' | 'incomplete' {
  return value === 'in_progress' || value === 'incomplete' ? value : 'completed';
}

export function mcpStatus(
  value: unknown,
): 'in_progress' | 'completed' | 'incomplete' | 'calling' | 'failed' | null {
  return value === 'in_progress' ||
    value === 'completed' ||
    value === 'incomplete' ||
    value === 'calling' ||
    value === 'failed'
    ? value
    : null;
}

/** `{ [key]: value }` when the value is there, else nothing: absent, not null, keeps the bytes small. */
export function optional<K extends string, V>(key: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [key]: value }) as { [P in K]?: V };
}

/** The text parts of a content list (input_text, output_text, refusal, summary_text …), joined. */
export function partsText(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  return (content as readonly unknown[])
    .filter(isRecord)
    .map((part) => text(part.text) ?? text(part.refusal))
    .filter((part) => part !== null)
    .join('\n');
}

/** A tool output as text: a string as it is, a list of parts as its text parts (images and files left out). */
export function toolOutputText(output: unknown): string {
  return typeof output === 'string' ? output : (partsText(output) ?? '');
}

/** An apply_patch call's operation as the input takes it, or null when it is not one. */
export function patchOperation(
  value: unknown,
):
  | { type: 'create_file' | 'update_file'; path: string; diff: string }
  | { type: 'delete_file'; path: string }
  | null {
  if (!isRecord(value)) return null;
  const path = text(value.path);
  if (path === null) return null;
  if (value.type === 'delete_file') return { type: 'delete_file', path };
  if ((value.type === 'create_file' || value.type === 'update_file') && typeof value.diff === 'string') {
    return { type: value.type, path, diff: value.diff };
  }
  return null;
}

/** A shell call's output chunks as the input takes them, or null when one is not a chunk. */
export function shellChunks(value: unknown): ResponseFunctionShellCallOutputContent[] | null {
  if (!Array.isArray(value)) return null;
  const chunks = (value as readonly unknown[]).filter(isRecord).map((chunk) => {
    const outcome = isRecord(chunk.outcome) ? chunk.outcome : {};
    return {
      stdout: str(chunk.stdout),
      stderr: str(chunk.stderr),
      outcome:
        outcome.type === 'exit' && typeof outcome.exit_code === 'number'
          ? { type: 'exit' as const, exit_code: outcome.exit_code }
          : { type: 'timeout' as const },
    };
  });
  return chunks.length === value.length ? chunks : null;
}
