import { isBlank, isBlock, type Block } from './anthropic-blocks.js';
import { isRecord } from './json.js';

// What the Messages API would refuse in a request body's `system` and `messages`, by its documented
// rules. Each rule cites where it is written down: the API reference and guides, or — where the guide
// only implies it — the API's own error message as reported in public issues. The body is checked as
// Tidemark hands it over: a final assistant message may hold calls whose results the runtime appends.

/** A Messages request body's `system` and `messages`, as untrusted as it comes. */
export interface AnthropicBodyShape {
  readonly system?: unknown;
  readonly messages?: unknown;
}

/** One problem per violation, readable on its own; empty: the body is valid. */
export function checkAnthropic(body: AnthropicBodyShape): string[] {
  const problems = systemProblems(body.system);
  // https://platform.claude.com/docs/en/api/messages (`messages`: "You can specify a single user-role
  // message, or you can include multiple user and assistant messages"): at least one is required.
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return [...problems, '`messages` must be a non-empty list'];
  }
  const messages = (body.messages as readonly unknown[]).map(readMessage);
  return [
    ...problems,
    ...messages.flatMap((message) => message.problems),
    ...firstMessageProblems(messages),
    ...alternationProblems(messages),
    ...emptyContentProblems(messages),
    ...blankTextProblems(messages),
    ...placementProblems(messages),
    ...unansweredCallProblems(messages),
    ...orphanResultProblems(messages),
    ...resultOrderProblems(messages),
    ...toolUseIdProblems(messages),
  ];
}

/** A message as far as it could be read; `problems` are what kept it from being read further. */
interface ReadMessage {
  readonly at: string;
  readonly role: 'user' | 'assistant' | null;
  readonly blocks: readonly Block[];
  readonly problems: readonly string[];
}

function readMessage(message: unknown, index: number): ReadMessage {
  const at = `messages[${index}]`;
  if (!isRecord(message)) return { at, role: null, blocks: [], problems: [`${at}: not a message object`] };
  const problems: string[] = [];
  // https://platform.claude.com/docs/en/api/messages: "Our models are trained to operate on alternating
  // `user` and `assistant` conversational turns"; a system prompt goes in the top-level `system`
  // parameter. (SDK 1.17 also types a `system` role here; Tidemark never sends one, and holds bodies
  // to the two documented roles.)
  const role = message.role === 'user' || message.role === 'assistant' ? message.role : null;
  if (role === null)
    problems.push(
      `${at}: role must be "user" or "assistant", not ${JSON.stringify(message.role) ?? 'undefined'}`,
    );
  // https://platform.claude.com/docs/en/api/messages: "Each input message `content` may be either a
  // single `string` or an array of content blocks, where each block has a specific `type`."
  const { content } = message;
  if (typeof content === 'string') return { at, role, blocks: [{ type: 'text', text: content }], problems };
  if (!Array.isArray(content)) {
    problems.push(`${at}: content must be a string or a list of content blocks`);
    return { at, role, blocks: [], problems };
  }
  const blocks: Block[] = [];
  (content as readonly unknown[]).forEach((block, position) => {
    if (isBlock(block)) blocks.push(block);
    else problems.push(`${at}.content[${position}]: not a content block (an object with a \`type\`)`);
  });
  return { at, role, blocks, problems };
}

/**
 * https://platform.claude.com/docs/en/api/messages (`system`: a string or a list of text blocks);
 * blank text is refused there as in messages ("system: text content blocks must contain non-whitespace
 * text", reproduced in https://github.com/experientiallabs/experiential/pull/804).
 */
function systemProblems(system: unknown): string[] {
  if (system === undefined) return [];
  if (typeof system === 'string') {
    return system.length > 0 && system.trim().length === 0
      ? ['system: text must not be only whitespace']
      : [];
  }
  if (!Array.isArray(system)) return ['system: must be a string or a list of text blocks'];
  return (system as readonly unknown[]).flatMap((block, index) =>
    isBlock(block) && block.type === 'text' && !isBlank(block.text)
      ? []
      : [`system[${index}]: must be a text block with non-blank text`],
  );
}

/**
 * The conversation opens with the user. The API reference shows every conversation starting so; the
 * API has refused an assistant-first list ("messages: first message must use the \"user\" role"), and
 * an assistant message first would otherwise be read as a prefill of nothing.
 * https://platform.claude.com/docs/en/api/messages
 */
function firstMessageProblems(messages: readonly ReadMessage[]): string[] {
  const first = messages[0];
  return first !== undefined && first.role === 'assistant'
    ? ['messages[0]: the first message must be a user message']
    : [];
}

/**
 * https://platform.claude.com/docs/en/api/messages: turns alternate between user and assistant. The API
 * combines consecutive same-role turns, but the tool rules below are judged message by message ("in the
 * next message", "in the previous message"), so a body Tidemark hands over keeps them apart.
 */
function alternationProblems(messages: readonly ReadMessage[]): string[] {
  return messages.flatMap((message, index) => {
    const previous = messages[index - 1];
    return previous !== undefined && message.role !== null && previous.role === message.role
      ? [`${message.at}: a second ${message.role} message in a row (roles must alternate)`]
      : [];
  });
}

/**
 * "all messages must have non-empty content except for the optional final assistant message" (the
 * API's error, https://github.com/anthropics/claude-code/issues/3196).
 */
function emptyContentProblems(messages: readonly ReadMessage[]): string[] {
  return messages.flatMap((message, index) => {
    const finalAssistant = index === messages.length - 1 && message.role === 'assistant';
    const empty =
      message.blocks.length === 0 || (message.blocks.length === 1 && message.blocks[0]!.text === '');
    return empty && !finalAssistant && message.problems.length === 0
      ? [`${message.at}: content is empty`]
      : [];
  });
}

/**
 * "text content blocks must be non-empty" / "must contain non-whitespace text" (the API's errors,
 * https://github.com/BerriAI/litellm/pull/22979, https://github.com/experientiallabs/experiential/pull/804).
 */
function blankTextProblems(messages: readonly ReadMessage[]): string[] {
  return messages.flatMap((message) =>
    message.blocks.flatMap((block, position) => {
      if (block.type !== 'text') return [];
      if (typeof block.text !== 'string')
        return [`${message.at}.content[${position}]: a text block without text`];
      // An empty string content is reported once, as empty content.
      if (block.text === '' && message.blocks.length === 1) return [];
      return isBlank(block.text)
        ? [`${message.at}.content[${position}]: text must not be empty or only whitespace`]
        : [];
    }),
  );
}

/**
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls: the assistant's
 * response holds the `tool_use` blocks; the results go back in a `user` message as `tool_result` blocks.
 */
function placementProblems(messages: readonly ReadMessage[]): string[] {
  return messages.flatMap((message) =>
    message.blocks.flatMap((block, position) => {
      if (block.type === 'tool_use' && message.role === 'user') {
        return [`${message.at}.content[${position}]: a tool_use block in a user message`];
      }
      if (block.type === 'tool_result' && message.role === 'assistant') {
        return [`${message.at}.content[${position}]: a tool_result block in an assistant message`];
      }
      return [];
    }),
  );
}

/**
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls: tool results must
 * immediately follow their tool use. The API's error: "tool_use ids were found without tool_result
 * blocks immediately after … Each tool_use block must have a corresponding tool_result block in the
 * next message" (https://github.com/anthropics/claude-code/issues/5060). A final assistant message is
 * exempt: nothing follows it yet, and the runtime appends the results before it sends.
 */
function unansweredCallProblems(messages: readonly ReadMessage[]): string[] {
  return messages.flatMap((message, index) => {
    const next = messages[index + 1];
    if (message.role !== 'assistant' || next === undefined) return [];
    const answered = new Set(idsOf(next, 'tool_result'));
    return idsOf(message, 'tool_use')
      .filter((id) => !answered.has(id))
      .map((id) => `${message.at}: tool_use ${id} has no tool_result in the next message`);
  });
}

/**
 * The API's error: "unexpected tool_use_id found in tool_result blocks … Each tool_result block must
 * have a corresponding tool_use block in the previous message"
 * (https://github.com/anthropics/claude-code/issues/13460); the guide:
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls.
 */
function orphanResultProblems(messages: readonly ReadMessage[]): string[] {
  return messages.flatMap((message, index) => {
    if (message.role !== 'user') return [];
    const previous = messages[index - 1];
    const calls = new Set(previous === undefined ? [] : idsOf(previous, 'tool_use'));
    return idsOf(message, 'tool_result')
      .filter((id) => !calls.has(id))
      .map((id) => `${message.at}: tool_result for ${id}, which is not a tool_use of the previous message`);
  });
}

/**
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls: in the user message
 * holding tool results, the `tool_result` blocks come first in the content; any text comes after them.
 */
function resultOrderProblems(messages: readonly ReadMessage[]): string[] {
  return messages.flatMap((message) => {
    if (message.role !== 'user') return [];
    const firstOther = message.blocks.findIndex((block) => block.type !== 'tool_result');
    const lateResult = message.blocks.findIndex((block, i) => i > firstOther && block.type === 'tool_result');
    return firstOther >= 0 && lateResult >= 0
      ? [
          `${message.at}.content[${lateResult}]: a tool_result after other content (tool results must come first)`,
        ]
      : [];
  });
}

/** The API's pattern for a tool_use id (its error: "tool_use.id: String should match pattern"). */
const toolUseIdPattern = /^[a-zA-Z0-9_-]+$/;

/**
 * Tool use ids are unique in a request ("tool_use ids must be unique",
 * https://github.com/anthropics/claude-code/issues/21317) and match `^[a-zA-Z0-9_-]+$`
 * (https://github.com/anomalyco/opencode/issues/1279).
 */
function toolUseIdProblems(messages: readonly ReadMessage[]): string[] {
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const message of messages) {
    for (const block of message.blocks) {
      if (block.type !== 'tool_use') continue;
      const id = block.id;
      if (typeof id !== 'string' || !toolUseIdPattern.test(id)) {
        problems.push(
          `${message.at}: tool_use id ${JSON.stringify(id) ?? 'undefined'} must match ^[a-zA-Z0-9_-]+$`,
        );
      } else if (seen.has(id)) {
        problems.push(`${message.at}: tool_use id ${id} is used twice (ids must be unique)`);
      }
      if (typeof id === 'string') seen.add(id);
    }
  }
  return problems;
}

function idsOf(message: ReadMessage, type: 'tool_use' | 'tool_result'): string[] {
  const field = type === 'tool_use' ? 'id' : 'tool_use_id';
  return message.blocks.flatMap((block) => {
    const id = block[field];
    return block.type === type && typeof id === 'string' ? [id] : [];
  });
}
