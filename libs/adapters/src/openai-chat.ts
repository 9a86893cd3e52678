import type { StateChange, TurnRole } from '@tidemark/core';
import { isNonEmptyString, isRecord, type JsonRecord } from './json.js';
import { argumentsDetail, TurnBuilder } from './turns.js';
import type { Conversion, ConvertOptions, Skipped } from './types.js';
import { patchFiles } from './v4a-patch.js';

// OpenAI Chat Completions → TurnEvents. The mapping is documented in README.md (OpenAI Chat Completions).
//
// One turn per message. State changes come from structure only (tool_calls, tool_call_id, an
// apply_patch call's patch), never from what the text says. Chat has no error flag on a tool message,
// so every answered call closes `ok`, even when its output reports an error; and no approvals.
// The other direction (a resume context as `messages`) is openai-chat-resume.ts; the apply_patch
// arguments are read by v4a-patch.ts.

/** A Chat Completions `messages` array as TurnEvents, one turn per message it understands. */
export function fromOpenAIChat(messages: readonly unknown[], options: ConvertOptions): Conversion {
  const builder = new TurnBuilder('openai-chat', options);
  const skipped: Skipped[] = [];
  const calls = new CallLedger();
  messages.forEach((message, index) => {
    const note = (reason: string): void => {
      skipped.push({ at: index + 1, reason });
    };
    const turn = readMessage(message, calls, note);
    if (turn !== null) builder.add({ ...turn, message });
  });
  return { turns: builder.turns, skipped };
}

interface ReadTurn {
  readonly role: TurnRole;
  readonly content: string;
  readonly changes: readonly StateChange[];
}

type Note = (reason: string) => void;

/** The call ids seen so far: a call is opened once and closed once, as the fold requires. */
class CallLedger {
  readonly #state = new Map<string, 'open' | 'closed'>();

  open(id: string): boolean {
    if (this.#state.has(id)) return false;
    this.#state.set(id, 'open');
    return true;
  }

  close(id: string): 'closed' | 'unknown' | 'already closed' {
    const state = this.#state.get(id);
    if (state === undefined) return 'unknown';
    if (state === 'closed') return 'already closed';
    this.#state.set(id, 'closed');
    return 'closed';
  }
}

/**
 * The turn a message makes, or null (noted) when the message is not understood. Each reader validates
 * before it records calls, so a skipped message leaves the ledger as it was.
 */
function readMessage(message: unknown, calls: CallLedger, note: Note): ReadTurn | null {
  if (!isRecord(message)) {
    note('not a message object');
    return null;
  }
  switch (message.role) {
    case 'system':
    case 'developer':
      return readPlain(message, 'system', note);
    case 'user':
      return readPlain(message, 'user', note);
    case 'assistant':
      return readAssistant(message, calls, note);
    case 'tool':
      return readTool(message, calls, note);
    case 'function':
      // The deprecated shape pairs a result with its call by name only: no id to key an item on.
      note('role function (deprecated function calling, no call id) is not read');
      return null;
    default:
      note(`unknown role ${JSON.stringify(message.role)}`);
      return null;
  }
}

function readPlain(message: JsonRecord, role: TurnRole, note: Note): ReadTurn | null {
  const content = textOf(message.content, note);
  if (content === null) {
    note(`${String(message.role)} content is neither text nor a list of content parts`);
    return null;
  }
  return { role, content, changes: [] };
}

function readAssistant(message: JsonRecord, calls: CallLedger, note: Note): ReadTurn | null {
  const text = message.content === undefined || message.content === null ? '' : textOf(message.content, note);
  if (text === null) {
    note('assistant content is neither text nor a list of content parts');
    return null;
  }
  const entries = message.tool_calls ?? [];
  if (!Array.isArray(entries)) {
    note('assistant tool_calls is not a list');
    return null;
  }
  const toolCalls = entries.flatMap((entry: unknown, index) => {
    const call = readToolCall(entry);
    if (call === null)
      note(`tool_calls[${index}] is not a function or custom tool call with an id and a name`);
    return call === null ? [] : [call];
  });
  const changes = toolCalls.flatMap((call) => {
    if (calls.open(call.id)) return [openedChange(call), ...patchChanges(call, note)];
    note(`tool call ${call.id} was opened by an earlier message: not opened again`);
    return [];
  });
  const lines = [text, refusalLine(message.refusal), ...toolCalls.map(callLine)];
  const legacy = legacyCall(message.function_call);
  if (legacy !== null) {
    note('function_call (deprecated, no call id) is kept in the text only: no item opened');
    lines.push(callLine(legacy));
  }
  return { role: 'assistant', content: lines.filter((line) => line.length > 0).join('\n'), changes };
}

function readTool(message: JsonRecord, calls: CallLedger, note: Note): ReadTurn | null {
  const id = message.tool_call_id;
  const content = textOf(message.content, note);
  if (typeof id !== 'string' || id.length === 0 || content === null) {
    note('a tool message needs a tool_call_id and text content');
    return null;
  }
  // Chat has no error flag on a tool message: a result is a result, whatever its text says.
  const closed = calls.close(id);
  if (closed !== 'closed') {
    note(
      `tool message for ${id}: ${closed === 'unknown' ? 'no earlier call has that id' : 'that call already has a result'}; kept as a turn that closes nothing`,
    );
    return { role: 'tool', content, changes: [] };
  }
  return {
    role: 'tool',
    content,
    changes: [{ type: 'item_closed', itemId: id, outcome: 'ok', detail: null }],
  };
}

/** A tool call as the turn needs it: function calls and custom tool calls alike. */
interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** The function's JSON arguments, or a custom tool's free-form input, as the model wrote them. */
  readonly args: string;
}

function readToolCall(entry: unknown): ToolCall | null {
  if (!isRecord(entry) || !isNonEmptyString(entry.id)) return null;
  const body = entry.type === 'function' ? entry.function : entry.type === 'custom' ? entry.custom : null;
  if (!isRecord(body) || !isNonEmptyString(body.name)) return null;
  const args = entry.type === 'function' ? body.arguments : body.input;
  return typeof args === 'string' ? { id: entry.id, name: body.name, args } : null;
}

function legacyCall(value: unknown): ToolCall | null {
  if (!isRecord(value) || !isNonEmptyString(value.name)) return null;
  return { id: '', name: value.name, args: typeof value.arguments === 'string' ? value.arguments : '' };
}

function openedChange(call: ToolCall): StateChange {
  return {
    type: 'item_opened',
    itemId: call.id,
    kind: 'tool_call',
    name: call.name,
    detail: argumentsDetail(call.args),
    handle: null,
    logPath: null,
  };
}

/** How a call reads in the turn's text, so the text says what was called. */
function callLine(call: ToolCall): string {
  return `${call.name}(${argumentsDetail(call.args) ?? ''})`;
}

function refusalLine(refusal: unknown): string {
  return typeof refusal === 'string' && refusal.length > 0 ? `[refusal] ${refusal}` : '';
}

/** A message's text: a string as is, a list of parts as their texts (one line each), else null. */
function textOf(content: unknown, note: Note): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  return content
    .flatMap((part: unknown, index) => {
      const text = partText(part);
      if (text === null)
        note(`content[${index}] is not a content part this format reads: left out of the text`);
      return text === null ? [] : [text];
    })
    .join('\n');
}

/** A content part's text; media parts are named, not inlined (their data is not text). */
function partText(part: unknown): string | null {
  if (!isRecord(part)) return null;
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string' ? part.text : null;
    case 'refusal':
      return typeof part.refusal === 'string' ? `[refusal] ${part.refusal}` : null;
    case 'image_url':
      return '[image]';
    case 'input_audio':
      return '[audio]';
    case 'file':
      return isRecord(part.file) && typeof part.file.filename === 'string'
        ? `[file ${part.file.filename}]`
        : '[file]';
    default:
      return null;
  }
}

// apply_patch: the files a patch creates, modifies or deletes, recorded on the call's turn (Chat has no
// error flag to tell a failed patch, so the call's intent is what is recorded).
function patchChanges(call: ToolCall, note: Note): StateChange[] {
  if (call.name !== 'apply_patch') return [];
  const files = patchFiles(call.args);
  if (files === null) {
    note(`apply_patch call ${call.id}: not a V4A patch or an apply_patch operation; no artifacts recorded`);
    return [];
  }
  return files.map((file) => ({ type: 'artifact_recorded', ...file }));
}
