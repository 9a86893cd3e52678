import { canonicalJson, contextHashOf, type ResumeMessage } from '@tidemark/core';
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
import { parseJson } from './json.js';
import type { Context } from './types.js';

// Resume context → OpenAI Chat Completions `messages`. The mapping is documented in README.md (OpenAI
// Chat Completions).
//
// Each turn's own message when it came from this format, else a plain text message of its role; then
// the pairing of calls and results is made valid without inventing a result (see pairCalls).

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
