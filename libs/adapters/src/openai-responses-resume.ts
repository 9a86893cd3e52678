import { canonicalJson, contextHashOf, type ResumeMessage, type TurnRole } from '@tidemark/core';
import type {
  ResponseInputContent,
  ResponseInputItem,
  ResponseFunctionShellCallOutputContent,
} from 'openai/resources/responses/responses';
import {
  answeringOutput,
  answerOf,
  callOf,
  trailingCallsFrom,
  type OutputType,
} from './check-openai-responses.js';
import type { Context } from './types.js';
import {
  argumentsText,
  callStatus,
  callView,
  isItem,
  type Item,
  itemType,
  mcpStatus,
  numberOrNull,
  optional,
  outputView,
  parseJson,
  partsText,
  str,
  stringRecord,
  strings,
  text,
  toolOutputText,
} from './openai-responses-items.js';

// OpenAI Responses, the other direction: a resume context in, a request body part (`instructions`,
// `input`) out that the API accepts, never inventing a result (see README.md, OpenAI Responses).

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
 * A Responses item given back as input: rebuilt from the fields the input accepts. Item ids are
 * dropped where the input makes them optional: they tie an output item to its stored response and to
 * the reasoning item before it ("Item 'fc_…' of type 'function_call' was provided without its
 * required 'reasoning' item"), and reasoning items are dropped (without their encrypted content they
 * cannot be given back, and one without its following item is refused). Null for an item not
 * understood, which is then given as a message of its turn's text.
 */
function givenBack(value: unknown): ResponseInputItem[] | null {
  if (!isItem(value)) return null;
  switch (itemType(value)) {
    case 'message':
      return givenBackMessage(value);
    case 'reasoning':
      return [];
    case 'function_call':
    case 'custom_tool_call':
    case 'local_shell_call':
    case 'shell_call':
    case 'apply_patch_call':
      return givenBackCall(value);
    case 'function_call_output':
    case 'custom_tool_call_output':
    case 'local_shell_call_output':
    case 'shell_call_output':
    case 'apply_patch_call_output':
      return givenBackOutput(value);
    case 'mcp_approval_request':
    case 'mcp_approval_response':
    case 'mcp_call':
      return givenBackMcp(value);
    default:
      return null;
  }
}

function givenBackMessage(item: Item): ResponseInputItem[] | null {
  const { role } = item;
  if (role === 'assistant') {
    // An assistant message given back as text: its output parts need the id of a stored response.
    const content = partsText(item.content);
    if (content === null) return null;
    const phase = item.phase === 'commentary' || item.phase === 'final_answer' ? item.phase : undefined;
    return [{ type: 'message', role: 'assistant', content, ...(phase === undefined ? {} : { phase }) }];
  }
  if (role !== 'user' && role !== 'system' && role !== 'developer') return null;
  const content = inputContent(item.content);
  if (content === null) return null;
  // A system turn after the start is a developer message (the node's message is the instructions).
  return [{ type: 'message', role: role === 'system' ? 'developer' : role, content }];
}

function inputContent(content: unknown): ResponseInputContent[] | null {
  if (typeof content === 'string') return [{ type: 'input_text', text: content }];
  if (!Array.isArray(content)) return null;
  const parts = (content as readonly unknown[]).filter(isItem).flatMap(inputPart);
  return parts.length === 0 ? null : parts;
}

function inputPart(part: Item): ResponseInputContent[] {
  switch (part.type) {
    case 'input_image': {
      const detail = part.detail === 'low' || part.detail === 'high' ? part.detail : 'auto';
      return [{ type: 'input_image', detail, file_id: text(part.file_id), image_url: text(part.image_url) }];
    }
    case 'input_file':
      return [
        {
          type: 'input_file',
          ...optional('file_id', text(part.file_id)),
          ...optional('file_url', text(part.file_url)),
          ...optional('file_data', text(part.file_data)),
          ...optional('filename', text(part.filename)),
        },
      ];
    default: {
      const partText = text(part.text);
      return partText === null ? [] : [{ type: 'input_text', text: partText }];
    }
  }
}

function givenBackCall(item: Item): ResponseInputItem[] | null {
  const callId = text(item.call_id);
  if (callId === null) return null;
  const action = isItem(item.action) ? item.action : {};
  switch (item.type) {
    case 'function_call': {
      const name = text(item.name);
      if (name === null || typeof item.arguments !== 'string') return null;
      return [
        {
          type: 'function_call',
          call_id: callId,
          name,
          arguments: item.arguments,
          ...optional('namespace', text(item.namespace)),
        },
      ];
    }
    case 'custom_tool_call': {
      const name = text(item.name);
      if (name === null || typeof item.input !== 'string') return null;
      return [
        {
          type: 'custom_tool_call',
          call_id: callId,
          name,
          input: item.input,
          ...optional('namespace', text(item.namespace)),
        },
      ];
    }
    case 'local_shell_call': {
      const id = text(item.id);
      const command = strings(action.command);
      if (id === null || command === null) return null;
      const env = isItem(action.env) ? stringRecord(action.env) : {};
      return [
        {
          type: 'local_shell_call',
          // Required by the input, unlike other call ids: kept.
          id,
          call_id: callId,
          status: callStatus(item.status),
          action: {
            type: 'exec',
            command,
            env,
            ...optional('timeout_ms', typeof action.timeout_ms === 'number' ? action.timeout_ms : null),
            ...optional('user', text(action.user)),
            ...optional('working_directory', text(action.working_directory)),
          },
        },
      ];
    }
    case 'shell_call': {
      const commands = strings(action.commands);
      if (commands === null) return null;
      return [
        {
          type: 'shell_call',
          call_id: callId,
          action: {
            commands,
            ...optional('max_output_length', numberOrNull(action.max_output_length)),
            ...optional('timeout_ms', numberOrNull(action.timeout_ms)),
          },
        },
      ];
    }
    case 'apply_patch_call': {
      const operation = patchOperation(item.operation);
      if (operation === null) return null;
      const status = item.status === 'in_progress' ? 'in_progress' : 'completed';
      return [{ type: 'apply_patch_call', call_id: callId, status, operation }];
    }
    default:
      return null;
  }
}

function patchOperation(
  value: unknown,
):
  | { type: 'create_file' | 'update_file'; path: string; diff: string }
  | { type: 'delete_file'; path: string }
  | null {
  if (!isItem(value)) return null;
  const path = text(value.path);
  if (path === null) return null;
  if (value.type === 'delete_file') return { type: 'delete_file', path };
  if ((value.type === 'create_file' || value.type === 'update_file') && typeof value.diff === 'string') {
    return { type: value.type, path, diff: value.diff };
  }
  return null;
}

function givenBackOutput(item: Item): ResponseInputItem[] | null {
  const answer = answerOf(item);
  if (answer === null) return null;
  const { callId } = answer;
  switch (answer.type) {
    case 'function_call_output':
      return [{ type: 'function_call_output', call_id: callId, output: toolOutputText(item.output) }];
    case 'custom_tool_call_output':
      return [{ type: 'custom_tool_call_output', call_id: callId, output: toolOutputText(item.output) }];
    case 'local_shell_call_output':
      return [
        {
          type: 'local_shell_call_output',
          id: callId,
          output: str(item.output),
          ...optional('status', item.status === undefined ? null : callStatus(item.status)),
        },
      ];
    case 'shell_call_output': {
      const output = shellChunks(item.output);
      return output === null
        ? null
        : [
            {
              type: 'shell_call_output',
              call_id: callId,
              output,
              ...optional('max_output_length', numberOrNull(item.max_output_length)),
            },
          ];
    }
    case 'apply_patch_call_output':
      return [
        {
          type: 'apply_patch_call_output',
          call_id: callId,
          status: item.status === 'failed' ? 'failed' : 'completed',
          ...optional('output', text(item.output)),
        },
      ];
    default: {
      const never: never = answer.type;
      throw new TypeError(`unknown output type ${String(never)}`);
    }
  }
}

function shellChunks(value: unknown): ResponseFunctionShellCallOutputContent[] | null {
  if (!Array.isArray(value)) return null;
  const chunks = (value as readonly unknown[]).filter(isItem).map((chunk) => {
    const outcome = isItem(chunk.outcome) ? chunk.outcome : {};
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

function givenBackMcp(item: Item): ResponseInputItem[] | null {
  const id = text(item.id);
  const name = text(item.name);
  const serverLabel = text(item.server_label);
  switch (item.type) {
    case 'mcp_approval_request':
      if (id === null || name === null || serverLabel === null) return null;
      return [
        {
          type: 'mcp_approval_request',
          // The id its response names: kept.
          id,
          name,
          server_label: serverLabel,
          arguments: argumentsText(item.arguments),
        },
      ];
    case 'mcp_approval_response': {
      const requestId = text(item.approval_request_id);
      if (requestId === null || typeof item.approve !== 'boolean') return null;
      return [
        {
          type: 'mcp_approval_response',
          approval_request_id: requestId,
          approve: item.approve,
          ...optional('reason', text(item.reason)),
        },
      ];
    }
    case 'mcp_call': {
      if (id === null || name === null || serverLabel === null) return null;
      const status = mcpStatus(item.status);
      return [
        {
          type: 'mcp_call',
          id,
          name,
          server_label: serverLabel,
          arguments: argumentsText(item.arguments),
          ...optional('output', text(item.output)),
          ...optional('error', text(item.error)),
          ...optional('approval_request_id', text(item.approval_request_id)),
          ...(status === null ? {} : { status }),
        },
      ];
    }
    default:
      return null;
  }
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
  const call = isItem(item) ? callView(item) : null;
  return {
    type: 'message',
    role: 'assistant',
    content: `[called ${call?.summary ?? String(item.type)} — no result in this context]`,
  };
}

// (a) An output whose call was summarized away: the real output, quoted with the call it answers.
function quotedOutput(item: ResponseInputItem): ResponseInputItem {
  const output = isItem(item) ? outputView(item) : null;
  return userText(
    `[output of call ${output?.callId ?? '?'}, whose call is not in this context] ${output?.text ?? ''}`,
  );
}
