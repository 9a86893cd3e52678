import { isRecord, type JsonRecord } from './json.js';

// What the Chat Completions API refuses in a request's `messages`, as a list of readable problems (empty:
// valid). Only documented rules are checked, each with where it is documented:
//
// [ref]   API reference, Create chat completion, `messages`:
//         https://platform.openai.com/docs/api-reference/chat/create — the same text is in the official
//         SDK's types, openai/resources/chat/completions/completions.d.ts (ChatCompletionMessageParam and
//         the types it unions).
// [tools] Function calling guide (results go back as `tool` messages carrying the call's id):
//         https://platform.openai.com/docs/guides/function-calling
// [400]   The API's own 400 errors for the ordering rules, quoted from requests it refused:
//         "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"
//           https://github.com/simonw/llm/issues/937
//         "An assistant message with 'tool_calls' must be followed by tool messages responding to each
//          'tool_call_id'. The following tool_call_ids did not have response messages: …"
//           https://github.com/agno-agi/agno/issues/3105, https://github.com/minoism/freecc/issues/2
//         "Duplicate value for 'tool_call_id' of 'call_…', in messages[7] and messages[8]."
//           https://github.com/agno-agi/agno/issues/5116

const roles = ['developer', 'system', 'user', 'assistant', 'tool', 'function'] as const;
type Role = (typeof roles)[number];

/** Problems with a whole request body `{ messages }`: each message's shape, then their order. */
export function checkOpenAIChat(body: unknown): string[] {
  if (!isRecord(body) || !Array.isArray(body.messages)) return ['body.messages must be a list of messages'];
  const messages: readonly unknown[] = body.messages;
  // [ref] `messages` is required: "A list of messages comprising the conversation so far".
  if (messages.length === 0) return ['body.messages must hold at least one message'];
  const shapes = messages.flatMap((message, index) =>
    checkOpenAIChatMessage(message).map((problem) => `messages[${index}]: ${problem}`),
  );
  return [...shapes, ...orderProblems(messages)];
}

/** Problems with one message by itself: its role, its content's shape and its role's own fields. */
export function checkOpenAIChatMessage(message: unknown): string[] {
  if (!isRecord(message)) return ['not a message object'];
  const role = message.role;
  // [ref] the message types are developer, system, user, assistant, tool and (deprecated) function.
  if (!isRole(role)) return [`role ${JSON.stringify(role)} is not one of ${roles.join(', ')}`];
  const problems = nameProblems(message, role);
  switch (role) {
    case 'developer':
    case 'system':
      return [...problems, ...contentProblems(message.content, ['text'])];
    case 'user':
      return [...problems, ...contentProblems(message.content, ['text', 'image_url', 'input_audio', 'file'])];
    case 'assistant':
      return [...problems, ...assistantProblems(message)];
    case 'tool':
      return [...problems, ...toolProblems(message)];
    case 'function':
      // [ref] deprecated: `content` is a string or null, `name` is required (checked above).
      return typeof message.content === 'string' || message.content === null
        ? problems
        : [...problems, 'a function message needs content (a string or null)'];
    default: {
      const never: never = role;
      return [`unknown role ${String(never)}`];
    }
  }
}

/** [ref] `name` is optional on developer, system, user and assistant messages, required on function ones. */
function nameProblems(message: JsonRecord, role: Role): string[] {
  if (role === 'function') return typeof message.name === 'string' ? [] : ['a function message needs a name'];
  if (role === 'tool' || message.name === undefined || typeof message.name === 'string') return [];
  return ['name must be a string'];
}

type PartType = 'text' | 'refusal' | 'image_url' | 'input_audio' | 'file';

/**
 * [ref] content is a string or a non-empty list of parts of the types the role allows: text only for
 * developer, system and tool; text, image_url, input_audio and file for user; text and refusal for
 * assistant.
 */
function contentProblems(content: unknown, allowed: readonly PartType[]): string[] {
  if (typeof content === 'string') return [];
  if (!Array.isArray(content)) return ['content must be a string or a list of content parts'];
  if (content.length === 0) return ['content must not be an empty list'];
  return content.flatMap((part: unknown, index) => {
    const problem = partProblem(part, allowed);
    return problem === null ? [] : [`content[${index}]: ${problem}`];
  });
}

function partProblem(part: unknown, allowed: readonly PartType[]): string | null {
  if (!isRecord(part)) return 'not a content part object';
  const type = part.type;
  if (typeof type !== 'string' || !(allowed as readonly string[]).includes(type)) {
    return `part type ${JSON.stringify(type)} is not allowed here (allowed: ${allowed.join(', ')})`;
  }
  switch (type as PartType) {
    case 'text':
      return typeof part.text === 'string' ? null : 'a text part needs text';
    case 'refusal':
      return typeof part.refusal === 'string' ? null : 'a refusal part needs refusal';
    case 'image_url':
      return isRecord(part.image_url) && typeof part.image_url.url === 'string'
        ? null
        : 'an image_url part needs image_url.url';
    case 'input_audio':
      return isRecord(part.input_audio) &&
        typeof part.input_audio.data === 'string' &&
        (part.input_audio.format === 'wav' || part.input_audio.format === 'mp3')
        ? null
        : 'an input_audio part needs input_audio.data and a format of wav or mp3';
    case 'file':
      return isRecord(part.file) ? null : 'a file part needs file';
  }
}

/**
 * [ref] assistant `content` is "Required unless `tool_calls` or `function_call` is specified"; each
 * tool call is a function call (id, function.name, function.arguments as a string) or a custom tool
 * call (id, custom.name, custom.input).
 */
function assistantProblems(message: JsonRecord): string[] {
  const calls = message.tool_calls;
  if (calls !== undefined && !Array.isArray(calls)) return ['tool_calls must be a list'];
  const callProblems = (calls ?? []).flatMap((call: unknown, index) => {
    const problem = toolCallProblem(call);
    return problem === null ? [] : [`tool_calls[${index}]: ${problem}`];
  });
  const hasCalls = (calls?.length ?? 0) > 0 || isRecord(message.function_call);
  if (message.content === undefined || message.content === null) {
    return hasCalls
      ? callProblems
      : ['an assistant message needs content unless it has tool_calls', ...callProblems];
  }
  return [...contentProblems(message.content, ['text', 'refusal']), ...callProblems];
}

function toolCallProblem(call: unknown): string | null {
  if (!isRecord(call) || typeof call.id !== 'string') return 'a tool call needs an id';
  if (call.type === 'function') {
    const fn = call.function;
    return isRecord(fn) && typeof fn.name === 'string' && typeof fn.arguments === 'string'
      ? null
      : 'a function tool call needs function.name and function.arguments (a string)';
  }
  if (call.type === 'custom') {
    const custom = call.custom;
    return isRecord(custom) && typeof custom.name === 'string' && typeof custom.input === 'string'
      ? null
      : 'a custom tool call needs custom.name and custom.input';
  }
  return `tool call type ${JSON.stringify(call.type)} is neither function nor custom`;
}

/** [ref] a tool message has content (text) and `tool_call_id`, "Tool call that this message is responding to". */
function toolProblems(message: JsonRecord): string[] {
  const id = typeof message.tool_call_id === 'string' ? [] : ['a tool message needs tool_call_id'];
  return [...id, ...contentProblems(message.content, ['text'])];
}

/** The calls an assistant message awaits answers to, while its tool messages are being read. */
interface Batch {
  readonly index: number;
  readonly ids: readonly string[];
  readonly answered: Set<string>;
}

/**
 * [400][tools] the order rules: a tool message answers a call of the assistant message it follows (only
 * tool messages in between); every call of an assistant message is answered before the next non-tool
 * message; no call is answered twice. A final assistant message with nothing after it may await its
 * results: the runtime appends them before it sends the request.
 */
function orderProblems(messages: readonly unknown[]): string[] {
  const problems: string[] = [];
  const answeredAt = new Map<string, number>();
  let batch: Batch | null = null;
  for (const [index, message] of messages.entries()) {
    if (!isRecord(message)) continue;
    if (message.role === 'tool') {
      problems.push(...answerProblems(message, index, batch, answeredAt));
      continue;
    }
    if (batch !== null) problems.push(...unansweredProblems(batch, `before messages[${index}]`));
    batch = batchOf(message, index);
  }
  if (batch !== null && batch.index < messages.length - 1) {
    problems.push(...unansweredProblems(batch, 'before the end of the messages'));
  }
  return problems;
}

function answerProblems(
  message: JsonRecord,
  index: number,
  batch: Batch | null,
  answeredAt: Map<string, number>,
): string[] {
  const id = message.tool_call_id;
  if (typeof id !== 'string') return [];
  const problems: string[] = [];
  if (batch === null) {
    problems.push(
      `messages[${index}]: tool message for ${id} does not follow an assistant message with tool_calls`,
    );
  } else if (!batch.ids.includes(id)) {
    problems.push(`messages[${index}]: tool message for ${id} answers no call of messages[${batch.index}]`);
  }
  const earlier = answeredAt.get(id);
  if (earlier !== undefined) {
    problems.push(`messages[${index}]: ${id} is already answered by messages[${earlier}]`);
  } else {
    answeredAt.set(id, index);
  }
  batch?.answered.add(id);
  return problems;
}

function unansweredProblems(batch: Batch, where: string): string[] {
  const missing = batch.ids.filter((id) => !batch.answered.has(id));
  return missing.length === 0
    ? []
    : [
        `messages[${batch.index}]: tool calls ${missing.join(', ')} are not answered by tool messages ${where}`,
      ];
}

function batchOf(message: JsonRecord, index: number): Batch | null {
  if (message.role !== 'assistant' || !Array.isArray(message.tool_calls)) return null;
  const ids = message.tool_calls.flatMap((call: unknown) =>
    isRecord(call) && typeof call.id === 'string' ? [call.id] : [],
  );
  return ids.length === 0 ? null : { index, ids, answered: new Set() };
}

function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (roles as readonly string[]).includes(value);
}
