import { canonicalJson, contextHashOf, type ResumeMessage, type TurnRole } from '@tidemark/core';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import {
  answeringOutput,
  answerOf,
  callOf,
  trailingCallsFrom,
  type OutputType,
} from './check-openai-responses.js';
import { isRecord, parseJson } from './json.js';
import { givenBack } from './openai-responses-given-back.js';
import { callView, outputView } from './openai-responses-items.js';
import type { Context } from './types.js';

// OpenAI Responses, the other direction: a resume context in, a request body part (`instructions`,
// `input`) out that the API accepts, never inventing a result (see README.md, OpenAI Responses). Each
// transcript item is given back by openai-responses-given-back.ts; here they are put together, and a
// call, an output or an approval decision that cannot stay one is restated.

// ---------------------------------------------------------------------------------------------------
// Resume context → request body

/** The part of a Responses request that carries a resume context. */
export interface OpenAIResponsesBody {
  readonly instructions?: string;
  readonly input: ResponseInputItem[];
}

/**
 * The context as a Responses request's `instructions` (the node's narrative and state block) and
 * `input` (every raw turn after it), made valid without inventing a result: an output whose call was
 * summarized away, a call whose output is not in the context and an approval decision whose request
 * was summarized away are restated as messages. Calls at the very end stay calls: the runtime runs
 * them and appends their outputs. The same context always gives the same bytes.
 */
export function toOpenAIResponses(context: Context): {
  readonly body: OpenAIResponsesBody;
  readonly contextHash: string;
} {
  const [first, ...later] = context.messages;
  const node = first !== undefined && isNodeMessage(first) ? first : null;
  const input = answerable((node === null ? context.messages : later).flatMap(inputItemsOf));
  const body: OpenAIResponsesBody = node === null ? { input } : { instructions: node.content, input };
  const contextHash = contextHashOf(
    canonicalJson({ kind: 'tidemark.resume-context', format: 'openai-responses', body }),
  );
  return { body, contextHash };
}

// buildResumeContext puts the node first as a system message of its own; a converted turn always
// carries its original, so a first system message without one is the node's.
function isNodeMessage(message: ResumeMessage): boolean {
  return message.role === 'system' && message.original === undefined;
}

function inputItemsOf(message: ResumeMessage): ResponseInputItem[] {
  if (message.original?.format === 'openai-responses') {
    const given = givenBack(parseJson(message.original.json));
    if (given !== null) return given;
  }
  return textMessage(message.role, message.content);
}

function textMessage(role: TurnRole, content: string): ResponseInputItem[] {
  // An empty message tells the model nothing (a chat tool-call turn's content, say).
  if (content.trim() === '') return [];
  switch (role) {
    case 'assistant':
      return [{ type: 'message', role: 'assistant', content }];
    case 'user':
      return [userText(content)];
    case 'system':
      return [{ type: 'message', role: 'developer', content: [{ type: 'input_text', text: content }] }];
    case 'tool':
      // The input has no tool role; an output without its call can only be quoted.
      return [userText(`[tool output] ${content}`)];
    default: {
      const never: never = role;
      throw new TypeError(`unknown role ${String(never)}`);
    }
  }
}

function userText(text: string): ResponseInputItem {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

/**
 * Rules (a)–(c) of the to-direction: a call stays a call when its output follows it, or when it is
 * among the calls at the very end (the runtime answers those); an output stays an output when it
 * answers a call kept before it; an approval response stays when its request is in the input. Anything
 * else is restated as a message that keeps what really happened.
 */
function answerable(items: readonly ResponseInputItem[]): ResponseInputItem[] {
  const paired = pairs(items);
  const trailingFrom = trailingCallsFrom(items);
  const requests = new Set<string>();
  return items.map((item, index) => {
    if (callOf(item) !== null) {
      return paired.has(index) || index >= trailingFrom ? item : restatedCall(item);
    }
    if (answerOf(item) !== null) return paired.has(index) ? item : quotedOutput(item);
    if (item.type === 'mcp_approval_request') requests.add(item.id);
    if (item.type === 'mcp_approval_response' && !requests.has(item.approval_request_id)) {
      return userText(
        `[approval decision] request ${item.approval_request_id} was ${item.approve ? 'approved' : 'denied'}${item.reason ? `: ${item.reason}` : ''}`,
      );
    }
    return item;
  });
}

/** The indices of calls and outputs that answer each other: each output, the latest open call of its id. */
function pairs(items: readonly ResponseInputItem[]): ReadonlySet<number> {
  const open: { readonly callId: string; readonly answeredBy: OutputType; readonly index: number }[] = [];
  const paired = new Set<number>();
  items.forEach((item, index) => {
    const call = callOf(item);
    if (call !== null) {
      open.push({ callId: call.callId, answeredBy: answeringOutput[call.type], index });
      return;
    }
    const answer = answerOf(item);
    if (answer === null) return;
    const at = open.findLastIndex((c) => c.callId === answer.callId && c.answeredBy === answer.type);
    if (at < 0) return;
    paired.add(open[at]!.index).add(index);
    open.splice(at, 1);
  });
  return paired;
}

// (b) A call whose result is not in the context: the model learns it was made, not what it returned.
function restatedCall(item: ResponseInputItem): ResponseInputItem {
  const call = isRecord(item) ? callView(item) : null;
  return {
    type: 'message',
    role: 'assistant',
    content: `[called ${call?.summary ?? String(item.type)} — no result in this context]`,
  };
}

// (a) An output whose call was summarized away: the real output, quoted with the call it answers.
function quotedOutput(item: ResponseInputItem): ResponseInputItem {
  const output = isRecord(item) ? outputView(item) : null;
  return userText(
    `[output of call ${output?.callId ?? '?'}, whose call is not in this context] ${output?.text ?? ''}`,
  );
}
