import type { ContentBlockParam, MessageParam, TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { canonicalJson, contextHashOf, type ResumeMessage } from '@tidemark/core';
import { isBlank, isBlock, resultText } from './anthropic-blocks.js';
import { isList, isRecord, parseJson } from './json.js';
import { argumentsDetail } from './turns.js';
import type { Context } from './types.js';

// Resume context → Anthropic Messages: a request body's `system` and `messages`, made valid by the
// documented tool-use rules without ever inventing a result. The other direction is anthropic.ts. The
// mapping, the rules and what the format cannot say: libs/adapters/README.md (Anthropic Messages).

/** The part of a Messages request body a resume context becomes. */
export interface AnthropicBody {
  readonly system?: string;
  readonly messages: MessageParam[];
}

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
  const message = parseJson(json);
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

function textBlock(text: string): TextBlockParam {
  return { type: 'text', text };
}
