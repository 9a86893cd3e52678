import { type ArtifactRecorded, type StateChange, type TurnRole } from '@tidemark/core';
import { isBlock, resultText, type Block } from './anthropic-blocks.js';
import { isList, isNonEmptyString, isRecord } from './json.js';
import { argumentsDetail, contentDigest, TurnBuilder } from './turns.js';
import type { Conversion, ConvertOptions, Skipped } from './types.js';

// Anthropic Messages → TurnEvents: a request's `system` and `messages` (content as a string or blocks)
// become TurnEvents, one per message, with items and artifacts read from block structure alone. The
// other direction is anthropic-resume.ts. The mapping, the rules and what the format cannot say:
// libs/adapters/README.md (Anthropic Messages).

/** A Messages transcript: a request's `system` and `messages`, or the messages alone. */
export type AnthropicTranscript =
  { readonly system?: unknown; readonly messages: readonly unknown[] } | readonly unknown[];

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

function callText(block: Block): string {
  const name = typeof block.name === 'string' ? block.name : 'tool';
  return `${name}(${argumentsDetail(block.input) ?? ''})`;
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
