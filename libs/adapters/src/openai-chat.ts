import {
  canonicalJson,
  contextHashOf,
  type ArtifactAction,
  type ResumeMessage,
  type StateChange,
  type TurnRole,
} from '@tidemark/core';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPartRefusal,
  ChatCompletionContentPartText,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionToolMessageParam,
  ChatCompletionUserMessageParam,
} from 'openai/resources/chat/completions';
import { checkOpenAIChatMessage } from './check-openai-chat.js';
import { argumentsDetail, contentDigest, TurnBuilder } from './turns.js';
import type { Context, Conversion, ConvertOptions, Skipped } from './types.js';

// OpenAI Chat Completions, both ways. The mapping is documented in docs/openai-chat.md.
//
// In: one turn per message. State changes come from structure only (tool_calls, tool_call_id, an
// apply_patch call's patch), never from what the text says. Chat has no error flag on a tool message,
// so every answered call closes `ok`, even when its output reports an error; and no approvals.
//
// Out: each turn's own message when it came from this format, else a plain text message of its role;
// then the pairing of calls and results is made valid without inventing a result (see pairCalls).

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------------
// Chat Completions → TurnEvents

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

function readPlain(message: Json, role: TurnRole, note: Note): ReadTurn | null {
  const content = textOf(message.content, note);
  if (content === null) {
    note(`${String(message.role)} content is neither text nor a list of content parts`);
    return null;
  }
  return { role, content, changes: [] };
}

function readAssistant(message: Json, calls: CallLedger, note: Note): ReadTurn | null {
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

function readTool(message: Json, calls: CallLedger, note: Note): ReadTurn | null {
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
  if (!isRecord(entry) || !isNonEmpty(entry.id)) return null;
  const body = entry.type === 'function' ? entry.function : entry.type === 'custom' ? entry.custom : null;
  if (!isRecord(body) || !isNonEmpty(body.name)) return null;
  const args = entry.type === 'function' ? body.arguments : body.input;
  return typeof args === 'string' ? { id: entry.id, name: body.name, args } : null;
}

function legacyCall(value: unknown): ToolCall | null {
  if (!isRecord(value) || !isNonEmpty(value.name)) return null;
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

// ---------------------------------------------------------------------------------------------------
// apply_patch: the files a patch creates, modifies or deletes, recorded on the call's turn (Chat has no
// error flag to tell a failed patch, so the call's intent is what is recorded).
//
// Chat Completions has no built-in apply_patch tool; agents declare it as a function (GPT-4.1 prompting
// guide: one string parameter `input` holding a V4A patch) or a custom tool (free-form input holding the
// patch). The Responses API's apply_patch_call carries an `operation` {type: create_file | update_file |
// delete_file, path, diff} (https://platform.openai.com/docs/guides/tools-apply-patch); a function whose
// arguments take that shape is read the same way.

interface FileChange {
  readonly path: string;
  readonly action: ArtifactAction;
  readonly digest: string | null;
}

function patchChanges(call: ToolCall, note: Note): StateChange[] {
  if (call.name !== 'apply_patch') return [];
  const files = patchFiles(call.args);
  if (files === null) {
    note(`apply_patch call ${call.id}: not a V4A patch or an apply_patch operation; no artifacts recorded`);
    return [];
  }
  return files.map((file) => ({ type: 'artifact_recorded', ...file }));
}

function patchFiles(args: string): readonly FileChange[] | null {
  const value = parseJson(args);
  if (value === undefined) return v4aFiles(args); // a custom tool's free-form patch
  if (typeof value === 'string') return v4aFiles(value);
  if (!isRecord(value)) return null;
  if (typeof value.input === 'string') return v4aFiles(value.input);
  if (typeof value.patch === 'string') return v4aFiles(value.patch);
  if (isRecord(value.operation)) return operationFiles(value.operation);
  if (typeof value.operation === 'string') return operationFiles({ ...value, type: value.operation });
  return operationFiles(value);
}

function operationFiles(operation: Json): readonly FileChange[] | null {
  const { type, path, diff } = operation;
  if (!isNonEmpty(path)) return null;
  switch (type) {
    case 'create_file': {
      const content =
        typeof diff === 'string' ? addedContent(withoutFinalEmptyLine(diff.split(/\r?\n/))) : null;
      return content === null ? null : [{ path, action: 'created', digest: contentDigest(content) }];
    }
    case 'update_file':
      return [{ path, action: 'modified', digest: null }];
    case 'delete_file':
      return [{ path, action: 'deleted', digest: null }];
    default:
      return null;
  }
}

const addFile = '*** Add File: ';
const updateFile = '*** Update File: ';
const deleteFile = '*** Delete File: ';
const moveTo = '*** Move to: ';
const endPatch = '*** End Patch';
const sectionStarts = [addFile, updateFile, deleteFile, endPatch];

/**
 * The files of a V4A patch (`*** Begin Patch` … `*** End Patch`), in patch order; null when it is not
 * one. An added file's content is in the patch in full, so it gets a digest; an update holds only hunks
 * (digest null); a move is the old path deleted and the new one modified.
 */
function v4aFiles(patch: string): readonly FileChange[] | null {
  const lines = patch.split(/\r?\n/);
  let index = lines.findIndex((line) => line.trim() === '*** Begin Patch') + 1;
  if (index === 0) return null;
  const files: FileChange[] = [];
  while (index < lines.length) {
    const line = lines[index]!;
    if (line.trim() === endPatch) return files;
    if (line.trim() === '') {
      index += 1;
      continue;
    }
    const end = nextSection(lines, index + 1);
    const section = sectionFiles(line, lines.slice(index + 1, end));
    if (section === null) return null;
    files.push(...section);
    index = end;
  }
  return null; // no End Patch: a patch cut short is not read
}

function sectionFiles(header: string, body: readonly string[]): readonly FileChange[] | null {
  if (header.startsWith(addFile)) {
    const content = addedContent(body);
    const path = header.slice(addFile.length).trim();
    return content === null || path === ''
      ? null
      : [{ path, action: 'created', digest: contentDigest(content) }];
  }
  if (header.startsWith(updateFile)) {
    const path = header.slice(updateFile.length).trim();
    const target = body[0]?.startsWith(moveTo) === true ? body[0].slice(moveTo.length).trim() : null;
    if (path === '' || target === '') return null;
    return target === null
      ? [{ path, action: 'modified', digest: null }]
      : [
          { path, action: 'deleted', digest: null },
          { path: target, action: 'modified', digest: null },
        ];
  }
  if (header.startsWith(deleteFile)) {
    const path = header.slice(deleteFile.length).trim();
    return path === '' ? null : [{ path, action: 'deleted', digest: null }];
  }
  return null;
}

function nextSection(lines: readonly string[], from: number): number {
  const found = lines.findIndex(
    (line, index) => index >= from && sectionStarts.some((start) => line.startsWith(start)),
  );
  return found === -1 ? lines.length : found;
}

/**
 * An added file's content: every line starts with '+'; the content is the lines without it, joined by
 * newlines, as OpenAI's reference apply_patch.py and the Agents SDK's applyDiff (create mode) read it.
 */
function addedContent(lines: readonly string[]): string | null {
  if (!lines.every((line) => line.startsWith('+'))) return null;
  return lines.map((line) => line.slice(1)).join('\n');
}

function withoutFinalEmptyLine(lines: readonly string[]): readonly string[] {
  return lines.at(-1) === '' ? lines.slice(0, -1) : lines;
}

// ---------------------------------------------------------------------------------------------------
// Resume context → Chat Completions

/** A resume context as a Chat Completions request's `messages`, valid as the API documents it. */
export function toOpenAIChat(context: Context): {
  readonly body: { readonly messages: ChatCompletionMessageParam[] };
  readonly contextHash: string;
} {
  const body = { messages: pairCalls(context.messages.map(chatMessage)) };
  const canonical = canonicalJson({ kind: 'tidemark.resume-context', format: 'openai-chat', body });
  return { body, contextHash: contextHashOf(canonical) };
}

/**
 * A context message as a Chat message: the turn's own message when it was read from this format and is
 * a valid message by itself; otherwise plain text of its role (tool output without its call has no tool
 * message to be, so it is told to the model as user text).
 */
function chatMessage(message: ResumeMessage): ChatCompletionMessageParam {
  const original = message.original?.format === 'openai-chat' ? parseJson(message.original.json) : undefined;
  if (original !== undefined && checkOpenAIChatMessage(original).length === 0) {
    return original as ChatCompletionMessageParam;
  }
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content };
    case 'assistant':
      return { role: 'assistant', content: message.content };
    case 'tool':
      return { role: 'user', content: `[tool output] ${message.content}` };
    default: {
      const never: never = message.role;
      return { role: 'user', content: `[${String(never)}] ${message.content}` };
    }
  }
}

/**
 * Makes calls and results pair up as the API requires, never inventing a result:
 * (a) a tool message that does not answer a call of the assistant message right before its run of tool
 *     messages (its call was summarized away before the boundary), or answers one already answered,
 *     becomes a user message quoting the call id and the real output, placed after the run;
 * (b) a call with no tool message in the run after its assistant message leaves tool_calls and is
 *     restated in that message's text, except in the last message when nothing follows it (the runtime
 *     supplies those results).
 */
function pairCalls(messages: readonly ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  const answered = new Set<string>();
  let index = 0;
  while (index < messages.length) {
    const message = messages[index]!;
    if (message.role === 'tool') {
      out.push(unpairedOutput(message, 'its call is not in this context'));
      index += 1;
    } else if (message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0) {
      const end = runEnd(messages, index + 1);
      const run = messages.slice(index + 1, end) as ChatCompletionToolMessageParam[];
      out.push(...answeredBatch(message, run, answered, end === messages.length && run.length === 0));
      index = end;
    } else {
      out.push(message);
      index += 1;
    }
  }
  return out;
}

/** The index after the run of tool messages starting at `from`. */
function runEnd(messages: readonly ChatCompletionMessageParam[], from: number): number {
  let end = from;
  while (end < messages.length && messages[end]!.role === 'tool') end += 1;
  return end;
}

/** An assistant message with calls and the tool messages after it, paired. */
function answeredBatch(
  assistant: ChatCompletionAssistantMessageParam,
  run: readonly ChatCompletionToolMessageParam[],
  answered: Set<string>,
  last: boolean,
): ChatCompletionMessageParam[] {
  const calls = assistant.tool_calls ?? [];
  const results: ChatCompletionToolMessageParam[] = [];
  const unpaired: ChatCompletionUserMessageParam[] = [];
  for (const tool of run) {
    const id = tool.tool_call_id;
    if (!calls.some((call) => call.id === id)) {
      unpaired.push(unpairedOutput(tool, 'its call is not in this context'));
    } else if (answered.has(id)) {
      unpaired.push(unpairedOutput(tool, 'the call already has a result'));
    } else {
      answered.add(id);
      results.push(tool);
    }
  }
  const unanswered = last ? [] : calls.filter((call) => !results.some((r) => r.tool_call_id === call.id));
  return [withoutCalls(assistant, unanswered), ...results, ...unpaired];
}

/** The assistant message without the given calls, each restated in its text. */
function withoutCalls(
  message: ChatCompletionAssistantMessageParam,
  dropped: readonly ChatCompletionMessageToolCall[],
): ChatCompletionAssistantMessageParam {
  if (dropped.length === 0) return message;
  const kept = (message.tool_calls ?? []).filter((call) => !dropped.includes(call));
  const restated = dropped
    .map((call) => `[called ${callLabel(call)} — no result in this context]`)
    .join('\n');
  const { tool_calls: _calls, ...rest } = message;
  const content = withText(message.content, restated);
  return kept.length === 0 ? { ...rest, content } : { ...rest, content, tool_calls: kept };
}

function callLabel(call: ChatCompletionMessageToolCall): string {
  return call.type === 'function'
    ? `${call.function.name}(${call.function.arguments})`
    : `${call.custom.name}(${call.custom.input})`;
}

function withText(
  content: ChatCompletionAssistantMessageParam['content'],
  text: string,
): string | (ChatCompletionContentPartText | ChatCompletionContentPartRefusal)[] {
  if (content === undefined || content === null || content === '') return text;
  if (typeof content === 'string') return `${content}\n${text}`;
  return [...content, { type: 'text', text }];
}

/** A tool message that cannot stay one, told as user text with its call id and its real output. */
function unpairedOutput(
  message: ChatCompletionToolMessageParam,
  why: string,
): ChatCompletionUserMessageParam {
  const output =
    typeof message.content === 'string'
      ? message.content
      : message.content.map((part) => part.text).join('\n');
  return { role: 'user', content: `[tool output for call ${message.tool_call_id} (${why})]\n${output}` };
}

// ---------------------------------------------------------------------------------------------------

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isNonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
