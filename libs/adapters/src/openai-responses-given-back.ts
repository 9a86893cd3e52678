import type { ResponseInputContent, ResponseInputItem } from 'openai/resources/responses/responses';
import { answerOf } from './check-openai-responses.js';
import { isRecord, text } from './json.js';
import {
  argumentsText,
  callStatus,
  type Item,
  itemType,
  mcpStatus,
  numberOrNull,
  optional,
  partsText,
  patchOperation,
  shellChunks,
  str,
  stringRecord,
  strings,
  toolOutputText,
} from './openai-responses-items.js';

// A Responses item of a transcript given back as request input (openai-responses-resume.ts puts the
// items of a resume context together and makes their pairing valid). See README.md, OpenAI Responses.

/**
 * A Responses item given back as input: rebuilt from the fields the input accepts. Item ids are
 * dropped where the input makes them optional: they tie an output item to its stored response and to
 * the reasoning item before it ("Item 'fc_…' of type 'function_call' was provided without its
 * required 'reasoning' item"), and reasoning items are dropped (without their encrypted content they
 * cannot be given back, and one without its following item is refused). Null for an item not
 * understood, which is then given as a message of its turn's text.
 */
export function givenBack(value: unknown): ResponseInputItem[] | null {
  if (!isRecord(value)) return null;
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
  const parts = (content as readonly unknown[]).filter(isRecord).flatMap(inputPart);
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
  const action = isRecord(item.action) ? item.action : {};
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
      const env = isRecord(action.env) ? stringRecord(action.env) : {};
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
