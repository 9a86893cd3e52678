import type { ContentBlockParam, MessageParam, TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import {
  canonicalJson,
  contextHashOf,
  type ArtifactRecorded,
  type ResumeMessage,
  type StateChange,
  type TurnRole,
} from '@tidemark/core';
import { argumentsDetail, contentDigest, TurnBuilder } from './turns.js';
import type { Context, Conversion, ConvertOptions, Skipped } from './types.js';

// Anthropic Messages. In: a request's `system` and `messages` (content as a string or blocks) become
// TurnEvents, one per message, with items and artifacts read from block structure alone. Out: a resume
// context becomes a request body's `system` and `messages`, made valid by the documented tool-use rules
// without ever inventing a result. The mapping, the rules and what the format cannot say:
// libs/adapters/README.md (Anthropic Messages).

/** A Messages transcript: a request's `system` and `messages`, or the messages alone. */
export type AnthropicTranscript =
  { readonly system?: unknown; readonly messages: readonly unknown[] } | readonly unknown[];

/** The part of a Messages request body a resume context becomes. */
export interface AnthropicBody {
  readonly system?: string;
  readonly messages: MessageParam[];
}

/** A content block as a transcript holds it: only its `type` is trusted before it is looked at. */
type Block = { readonly type: string } & Readonly<Record<string, unknown>>;

// ---------------------------------------------------------------------------------------------------
// From a transcript

/**
 * Converts a Messages transcript: the top-level `system` (when there is one) is a first turn of role
 * system, then one turn per message. `skipped[].at` is the message's index + 1 (0: the document itself,
 * its `system` or its `messages` field).
 */
export function fromAnthropic(transcript: AnthropicTranscript, options: ConvertOptions): Conversion {
  const builder = new TurnBuilder('anthropic', options);
  const skipped: Skipped[] = [];
  const { system, messages } = isList(transcript) ? { system: undefined, messages: transcript } : transcript;
  addSystemTurn(builder, system, (reason) => void skipped.push({ at: 0, reason }));
  if (!isList(messages)) {
    skipped.push({ at: 0, reason: '`messages` is not a list' });
    return { turns: builder.turns, skipped };
  }
  const calls = new CallLedger();
  messages.forEach((message, index) => {
    const skip = (reason: string): void => void skipped.push({ at: index + 1, reason });
    const parsed = parseMessage(message);
    if (typeof parsed === 'string') skip(parsed);
    else builder.add({ ...convertMessage(parsed, calls, skip), message, id: parsed.id });
  });
  return { turns: builder.turns, skipped };
}

function addSystemTurn(builder: TurnBuilder, system: unknown, skip: (reason: string) => void): void {
  if (system === undefined || system === null) return;
  const text = typeof system === 'string' ? system : textOfTextBlocks(system);
  if (text === null) return skip('the top-level `system` is neither a string nor a list of text blocks');
  // An empty system prompt says nothing a resumed agent needs.
  if (text.trim().length === 0) return;
  builder.add({ role: 'system', content: text, changes: [], message: { system } });
}

/** A message the converter understands; a string is why it does not. */
interface ParsedMessage {
  readonly role: 'user' | 'assistant' | 'system';
  readonly blocks: readonly unknown[];
  /** A stored response's own id (`msg_…`), when the transcript kept it. */
  readonly id: string | null;
}

function parseMessage(message: unknown): ParsedMessage | string {
  if (!isRecord(message)) return 'not a message object';
  const { role, content, id } = message;
  // SDK 1.17 types a `system` role inside `messages` too (SystemMessageParam); it is read as a system turn.
  if (role !== 'user' && role !== 'assistant' && role !== 'system') {
    return `unknown role ${JSON.stringify(role) ?? 'undefined'}`;
  }
  const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : content;
  if (!isList(blocks)) return 'content is neither a string nor a list of content blocks';
  return { role, blocks, id: typeof id === 'string' && id.length > 0 ? id : null };
}

function convertMessage(
  message: ParsedMessage,
  calls: CallLedger,
  skip: (reason: string) => void,
): { readonly role: TurnRole; readonly content: string; readonly changes: StateChange[] } {
  const rendered: string[] = [];
  const changes: StateChange[] = [];
  message.blocks.forEach((block, index) => {
    if (!isBlock(block)) {
      skip(`content block ${index + 1} is not a content block`);
      rendered.push('[unrecognized block]');
      return;
    }
    const text = renderBlock(block);
    if (text.length > 0) rendered.push(text);
    changes.push(...changesOf(block, calls, skip));
  });
  return { role: turnRole(message), content: rendered.join('\n'), changes };
}

/** A user message made only of tool results is the tools speaking, not the user. */
function turnRole(message: ParsedMessage): TurnRole {
  if (message.role !== 'user') return message.role;
  const onlyResults =
    message.blocks.length > 0 && message.blocks.every((b) => isBlock(b) && b.type === 'tool_result');
  return onlyResults ? 'tool' : 'user';
}

/** A block as turn text. Unknown block types keep their place in the text, as their type. */
function renderBlock(block: Block): string {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'tool_use':
    case 'server_tool_use':
      return callText(block);
    case 'tool_result':
      return resultText(block.content);
    // Signed reasoning: kept in the original message for giving back, not part of what was said.
    case 'thinking':
    case 'redacted_thinking':
      return '';
    default:
      return `[${block.type}]`;
  }
}

/** The state changes a block makes: only client tool calls and their results make any. */
function changesOf(block: Block, calls: CallLedger, skip: (reason: string) => void): StateChange[] {
  switch (block.type) {
    case 'tool_use':
      return calls.open(block, skip);
    case 'tool_result':
      return calls.close(block, skip);
    // Server tools (web search, code execution…) run and resolve inside one API response: nothing
    // stays open for a resumed agent to wait on.
    default:
      return [];
  }
}

/** The transcript's tool calls so far, so that each opens once and closes once. */
class CallLedger {
  readonly #state = new Map<string, 'open' | 'closed'>();

  open(block: Block, skip: (reason: string) => void): StateChange[] {
    const { id, name, input } = block;
    if (!isNonEmptyString(id) || !isNonEmptyString(name)) {
      skip('a tool_use block without an id or a name: no item opened');
      return [];
    }
    if (this.#state.has(id)) {
      skip(`tool_use id ${id} is used again: its item is opened once`);
      return [];
    }
    this.#state.set(id, 'open');
    const opened: StateChange = {
      type: 'item_opened',
      itemId: id,
      kind: 'tool_call',
      name,
      detail: argumentsDetail(input),
      handle: null,
      logPath: null,
    };
    const edit = editArtifact(name, input);
    return edit === null ? [opened] : [opened, edit];
  }

  close(block: Block, skip: (reason: string) => void): StateChange[] {
    const id = block.tool_use_id;
    if (!isNonEmptyString(id)) {
      skip('a tool_result block without a tool_use_id: nothing closed');
      return [];
    }
    const state = this.#state.get(id);
    if (state !== 'open') {
      skip(
        state === 'closed'
          ? `a second tool_result for ${id}: its item is closed once`
          : `a tool_result for ${id}, a call not in this transcript: nothing closed`,
      );
      return [];
    }
    this.#state.set(id, 'closed');
    // `is_error` is the only structure the format has for a failed call, a declined one included.
    const outcome = block.is_error === true ? 'error' : 'ok';
    return [{ type: 'item_closed', itemId: id, outcome, detail: shortText(resultText(block.content)) }];
  }
}

/**
 * Anthropic's text editor tool (https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool):
 * `str_replace_based_edit_tool` (text_editor_20250429 / 20250728) and `str_replace_editor`
 * (text_editor_20250124), each input with a `command` and a `path`.
 */
const textEditorTools: ReadonlySet<string> = new Set(['str_replace_based_edit_tool', 'str_replace_editor']);

/** The file a text-editor call writes, recorded on the call's own turn; `view` writes nothing. */
function editArtifact(name: string, input: unknown): ArtifactRecorded | null {
  if (!textEditorTools.has(name) || !isRecord(input) || !isNonEmptyString(input.path)) return null;
  const { command, path, file_text: fileText } = input;
  switch (command) {
    case 'create': {
      const digest = typeof fileText === 'string' ? contentDigest(fileText) : null;
      return { type: 'artifact_recorded', path, action: 'created', digest };
    }
    // The content after an edit is not in the call: only the file it changed is known.
    case 'str_replace':
    case 'insert':
    case 'undo_edit':
      return { type: 'artifact_recorded', path, action: 'modified', digest: null };
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------------------------------
// To a request body

/**
 * A resume context as a Messages request body's `system` and `messages`: leading system messages (the
 * node's narrative and state block) become `system`; a raw turn converted from a Messages transcript is
 * given back as its original message; the rest become text. Then the documented rules are applied — a
 * tool result whose call is not right before it, and a call with no result right after it, are
 * restated as text; roles alternate, starting with the user — never by inventing a result.
 */
export function toAnthropic(context: Context): {
  readonly body: AnthropicBody;
  readonly contextHash: string;
} {
  const { system, rest } = splitLeadingSystem(context.messages);
  const drafts = rest.map(draftOf).filter((draft) => draft.content.length > 0);
  const repaired = restateUnansweredCalls(quoteOrphanResults(mergeSameRole(drafts)));
  const messages = startWithUser(repaired.map(resultsFirst));
  const body: AnthropicBody = system === null ? { messages } : { system, messages };
  const contextHash = contextHashOf(
    canonicalJson({ kind: 'tidemark.resume-context', format: 'anthropic', body }),
  );
  return { body, contextHash };
}

/** A message being assembled: always a list of blocks, so that merging is concatenation. */
interface Draft {
  readonly role: 'user' | 'assistant';
  readonly content: readonly ContentBlockParam[];
}

const resumedNote = '(resumed from a Tidemark context)';

function splitLeadingSystem(messages: readonly ResumeMessage[]): {
  readonly system: string | null;
  readonly rest: readonly ResumeMessage[];
} {
  const leading = messages.findIndex((message) => message.role !== 'system');
  const count = leading === -1 ? messages.length : leading;
  const texts = messages
    .slice(0, count)
    .map((m) => m.content)
    .filter((text) => text.trim().length > 0);
  return { system: texts.length === 0 ? null : texts.join('\n\n'), rest: messages.slice(count) };
}

function draftOf(message: ResumeMessage): Draft {
  const original = message.original?.format === 'anthropic' ? originalDraft(message.original.json) : null;
  switch (message.role) {
    // A system turn after the conversation began has no place but the user's side of it.
    case 'system':
      return textDraft('user', `[system] ${message.content}`);
    case 'user':
    case 'assistant':
      return original ?? textDraft(message.role, message.content);
    case 'tool':
      return original ?? textDraft('user', `[tool output] ${message.content}`);
    default: {
      const never: never = message.role;
      throw new TypeError(`unknown role ${String(never)}`);
    }
  }
}

/** The provider message a turn was converted from, or null when it is not one this format can give back. */
function originalDraft(json: string): Draft | null {
  let message: unknown;
  try {
    message = JSON.parse(json);
  } catch {
    return null;
  }
  if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant')) return null;
  const { role, content } = message;
  if (typeof content === 'string') return textDraft(role, content);
  if (!isList(content) || !content.every(isBlock)) return null;
  // Given back as it was (thinking blocks must be), except for blank text, which the API refuses.
  const blocks = content.filter((block) => block.type !== 'text' || !isBlank(block.text));
  return { role, content: blocks as unknown as ContentBlockParam[] };
}

function textDraft(role: Draft['role'], text: string): Draft {
  return { role, content: isBlank(text) ? [] : [textBlock(text)] };
}

/** Rule (c): consecutive messages of one role become one, their blocks in order. */
function mergeSameRole(drafts: readonly Draft[]): Draft[] {
  const merged: Draft[] = [];
  for (const draft of drafts) {
    const last = merged.at(-1);
    if (last?.role === draft.role)
      merged[merged.length - 1] = { ...last, content: [...last.content, ...draft.content] };
    else merged.push(draft);
  }
  return merged;
}

/**
 * Rule (a): a tool_result must answer a tool_use of the message right before it. One whose call was
 * summarized away (or that is not in a user message at all) is quoted as text, with its real result.
 */
function quoteOrphanResults(messages: readonly Draft[]): Draft[] {
  return messages.map((message, index) => {
    const previous = messages[index - 1];
    const calls = message.role === 'user' && previous !== undefined ? callIds(previous) : new Set<string>();
    const content = message.content.map((block) =>
      block.type === 'tool_result' && !calls.has(block.tool_use_id) ? orphanResultText(block) : block,
    );
    return { ...message, content };
  });
}

/**
 * Rule (b): a tool_use must be answered in the very next message. One that is not is restated as text,
 * except in a final assistant message: there the runtime appends the results before it sends.
 */
function restateUnansweredCalls(messages: readonly Draft[]): Draft[] {
  return messages.map((message, index) => {
    const next = messages[index + 1];
    if (message.role === 'assistant' && next === undefined) return message;
    const answered = message.role === 'assistant' && next !== undefined ? resultIds(next) : new Set<string>();
    const content = message.content.map((block) =>
      block.type === 'tool_use' && !answered.has(block.id) ? unansweredCallText(block) : block,
    );
    return { ...message, content };
  });
}

/** Rule (c): in a user message, tool results come before anything else. */
function resultsFirst(message: Draft): MessageParam {
  if (message.role === 'assistant') return { role: 'assistant', content: [...message.content] };
  const results = message.content.filter((block) => block.type === 'tool_result');
  const others = message.content.filter((block) => block.type !== 'tool_result');
  return { role: 'user', content: [...results, ...others] };
}

/** Rule (c): the conversation opens with the user, and has at least one message. */
function startWithUser(messages: MessageParam[]): MessageParam[] {
  if (messages[0]?.role === 'user') return messages;
  return [{ role: 'user', content: [textBlock(resumedNote)] }, ...messages];
}

function callIds(message: Draft): Set<string> {
  return new Set(message.content.flatMap((block) => (block.type === 'tool_use' ? [block.id] : [])));
}

function resultIds(message: Draft): Set<string> {
  return new Set(
    message.content.flatMap((block) => (block.type === 'tool_result' ? [block.tool_use_id] : [])),
  );
}

function orphanResultText(block: {
  readonly tool_use_id: string;
  readonly is_error?: boolean;
  readonly content?: unknown;
}): TextBlockParam {
  const error = block.is_error === true ? ', an error' : '';
  const result = resultText(block.content);
  return textBlock(
    `[result of tool call ${block.tool_use_id}${error}; the call is not in this context]\n${result}`,
  );
}

function unansweredCallText(block: { readonly name: string; readonly input: unknown }): TextBlockParam {
  return textBlock(
    `[called ${block.name}(${argumentsDetail(block.input) ?? ''}) — no result in this context]`,
  );
}

// ---------------------------------------------------------------------------------------------------
// Shared

function textBlock(text: string): TextBlockParam {
  return { type: 'text', text };
}

function callText(block: Block): string {
  const name = typeof block.name === 'string' ? block.name : 'tool';
  return `${name}(${argumentsDetail(block.input) ?? ''})`;
}

/** A tool result's text: a string, or its text blocks in order (other blocks by their type). */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!isList(content)) return '';
  return content
    .map((part) =>
      isBlock(part) && part.type === 'text' && typeof part.text === 'string'
        ? part.text
        : `[${blockType(part)}]`,
    )
    .join('\n');
}

function textOfTextBlocks(value: unknown): string | null {
  if (!isList(value)) return null;
  const texts = value.map((block) =>
    isBlock(block) && block.type === 'text' && typeof block.text === 'string' ? block.text : null,
  );
  return texts.every((text) => text !== null) ? texts.join('\n') : null;
}

const detailLength = 160;

/** A result's gist for an item's detail: one line, at most `detailLength` characters. */
function shortText(text: string): string | null {
  const line = text.replace(/\s+/g, ' ').trim();
  if (line.length === 0) return null;
  return line.length <= detailLength ? line : `${line.slice(0, detailLength - 1)}…`;
}

function blockType(value: unknown): string {
  return isBlock(value) ? value.type : 'unrecognized block';
}

function isBlank(text: unknown): boolean {
  return typeof text !== 'string' || text.trim().length === 0;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isBlock(value: unknown): value is Block {
  return isRecord(value) && typeof value.type === 'string';
}
