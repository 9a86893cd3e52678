import { type ItemKind, type StateChange, type TurnRole } from '@tidemark/core';
import { answeringOutput, isCallType, type CallType } from './check-openai-responses.js';
import { argumentsDetail, contentDigest, TurnBuilder } from './turns.js';
import type { Conversion, ConvertOptions, Skipped } from './types.js';
import { isRecord, text } from './json.js';
import {
  approvalText,
  argumentsText,
  callView,
  type Item,
  itemType,
  outputView,
  partsText,
} from './openai-responses-items.js';
import { createdContent } from './v4a-patch.js';

// OpenAI Responses: an input/output item list in, TurnEvents out (one turn per item); a resume context
// in, a request body part (`instructions`, `input`) out that the API accepts. State changes come from
// the items' structure only (call ids, statuses, exit codes, approval decisions), never from their text.
// The request-body direction is openai-responses-resume.ts (with openai-responses-given-back.ts); the
// mapping of both is in README.md.

// ---------------------------------------------------------------------------------------------------
// Transcript → turns

/** What one item becomes: a turn without its seq and ids, or the reason it was skipped. */
type Reading =
  | {
      readonly role: TurnRole;
      readonly content: string;
      readonly changes: readonly StateChange[];
      readonly id: string | null;
    }
  | { readonly skip: string };

/**
 * Converts a Responses item list (a request's `input`, a response's `output`, or both in order) to
 * turns, one per item. An item it does not understand is skipped and listed, never thrown.
 */
export function fromOpenAIResponses(items: readonly unknown[], options: ConvertOptions): Conversion {
  const builder = new TurnBuilder('openai-responses', options);
  const ledger = new OpenItems();
  const skipped: Skipped[] = [];
  items.forEach((item, index) => {
    const reading = readItem(item, ledger);
    if ('skip' in reading) skipped.push({ at: index + 1, reason: reading.skip });
    else builder.add({ ...reading, message: item });
  });
  return { turns: builder.turns, skipped };
}

/**
 * Items opened and not yet ended, with the output type that ends each and why its call already says
 * it failed. It never opens an id twice nor closes one that is not open: the fold would dead-letter
 * either, so an orphan or repeated output is a turn that changes no state.
 */
class OpenItems {
  readonly #open = new Map<string, { readonly endedBy: string; readonly failure: string | null }>();
  readonly #seen = new Set<string>();

  open(
    item: {
      readonly itemId: string;
      readonly kind: ItemKind;
      readonly name: string;
      readonly detail: string | null;
    },
    endedBy: string,
    failure: string | null = null,
  ): StateChange[] {
    if (this.#seen.has(item.itemId)) return [];
    this.#seen.add(item.itemId);
    this.#open.set(item.itemId, { endedBy, failure });
    const subprocess = item.kind === 'subprocess';
    // The format has no log path for a shell call; its handle is the call id the output names.
    return [{ type: 'item_opened', ...item, handle: subprocess ? item.itemId : null, logPath: null }];
  }

  close(
    itemId: string,
    endedBy: string,
    failure: string | null,
    outcome: 'ok' | 'cancelled' = 'ok',
  ): StateChange[] {
    const open = this.#open.get(itemId);
    if (open === undefined || open.endedBy !== endedBy) return [];
    this.#open.delete(itemId);
    const why = failure ?? open.failure;
    return [{ type: 'item_closed', itemId, outcome: why === null ? outcome : 'error', detail: why ?? null }];
  }
}

function readItem(item: unknown, ledger: OpenItems): Reading {
  if (!isRecord(item)) return { skip: 'not an object' };
  const type = itemType(item);
  if (isCallType(type)) return readCall(item, type, ledger);
  switch (type) {
    case 'message':
      return readMessage(item);
    case 'reasoning':
      return readReasoning(item);
    case 'function_call_output':
    case 'custom_tool_call_output':
    case 'local_shell_call_output':
    case 'shell_call_output':
    case 'apply_patch_call_output':
      return readOutput(item, ledger);
    case 'mcp_approval_request':
      return readApprovalRequest(item, ledger);
    case 'mcp_approval_response':
      return readApprovalResponse(item, ledger);
    case 'mcp_call':
      return readMcpCall(item, ledger);
    default:
      return { skip: `unsupported item type ${JSON.stringify(type)}` };
  }
}

const turnRoles: Readonly<Record<string, TurnRole>> = {
  user: 'user',
  assistant: 'assistant',
  system: 'system',
  developer: 'system',
};

function readMessage(item: Item): Reading {
  const role = typeof item.role === 'string' ? turnRoles[item.role] : undefined;
  if (role === undefined) return { skip: `message with role ${JSON.stringify(item.role)}` };
  const content = partsText(item.content);
  if (content === null) return { skip: 'message content is neither text nor a list of parts' };
  return { role, content, changes: [], id: text(item.id) };
}

// A reasoning item is the model's own: an assistant turn of its summary, which changes no state.
function readReasoning(item: Item): Reading {
  const summary = partsText(item.summary) ?? '';
  return {
    role: 'assistant',
    content: summary === '' ? (partsText(item.content) ?? '') : summary,
    changes: [],
    id: text(item.id),
  };
}

function readCall(item: Item, type: CallType, ledger: OpenItems): Reading {
  const call = callView(item);
  if (call === null) return { skip: `${String(item.type)} without a call id or what it calls` };
  const { callId, kind, itemName, detail, failure } = call;
  const changes = ledger.open(
    { itemId: callId, kind, name: itemName, detail },
    answeringOutput[type],
    failure,
  );
  const artifact = artifactOf(item);
  return {
    role: 'assistant',
    content: call.rendered,
    changes: artifact === null ? changes : [...changes, artifact],
    id: text(item.id) ?? callId,
  };
}

function readOutput(item: Item, ledger: OpenItems): Reading {
  const output = outputView(item);
  if (output === null) return { skip: `${String(item.type)} without the call id it answers` };
  return {
    role: 'tool',
    content: output.text,
    changes: ledger.close(output.callId, output.type, output.failure),
    // Its own id, else one that cannot collide with its call's turn id (the call id).
    id: text(item.id) ?? `${output.callId}:output`,
  };
}

function readApprovalRequest(item: Item, ledger: OpenItems): Reading {
  const id = text(item.id);
  const name = mcpName(item);
  if (id === null || name === null) return { skip: 'mcp_approval_request without an id or a tool name' };
  const detail = argumentsDetail(item.arguments);
  return {
    role: 'assistant',
    content: `[approval requested] ${name}(${argumentsText(item.arguments)})`,
    changes: ledger.open({ itemId: id, kind: 'approval_request', name, detail }, 'mcp_approval_response'),
    id,
  };
}

// The human's answer: approved closes the request ok; denied closes it cancelled and records the
// rejection, which a resumed agent must not retry.
function readApprovalResponse(item: Item, ledger: OpenItems): Reading {
  const requestId = text(item.approval_request_id);
  if (requestId === null || typeof item.approve !== 'boolean') {
    return { skip: 'mcp_approval_response without approval_request_id or approve' };
  }
  const reason = text(item.reason);
  const changes: StateChange[] = item.approve
    ? ledger.close(requestId, 'mcp_approval_response', null)
    : [
        ...ledger.close(requestId, 'mcp_approval_response', null, 'cancelled'),
        {
          type: 'item_disposed',
          itemKey: requestId,
          disposition: 'rejected',
          reason: reason ?? 'denied',
          supersededBy: null,
        },
      ];
  return {
    role: 'user',
    content: approvalText(requestId, item.approve, reason),
    changes,
    id: text(item.id) ?? `${requestId}:response`,
  };
}

// An MCP call runs on OpenAI's side and carries its own result: it opens, and ends in the same turn
// once its status or its output says so.
function readMcpCall(item: Item, ledger: OpenItems): Reading {
  const id = text(item.id);
  const name = mcpName(item);
  if (id === null || name === null) return { skip: 'mcp_call without an id or a tool name' };
  const error = text(item.error);
  const failure =
    error ?? (item.status === 'failed' || item.status === 'incomplete' ? `status ${item.status}` : null);
  const ended = failure !== null || item.status === 'completed' || typeof item.output === 'string';
  const changes = [
    ...ledger.open(
      { itemId: id, kind: 'tool_call', name, detail: argumentsDetail(item.arguments) },
      'mcp_call',
    ),
    ...(ended ? ledger.close(id, 'mcp_call', failure) : []),
  ];
  const result = error ?? text(item.output);
  const call = `${name}(${argumentsText(item.arguments)})`;
  return { role: 'assistant', content: result === null ? call : `${call}\n${result}`, changes, id };
}

function mcpName(item: Item): string | null {
  const name = text(item.name);
  const server = text(item.server_label);
  if (name === null) return null;
  return server === null ? name : `${server}.${name}`;
}

/** An apply_patch call's artifact: the file it creates, updates or deletes. */
function artifactOf(item: Item): StateChange | null {
  if (item.type !== 'apply_patch_call' || !isRecord(item.operation)) return null;
  const { type, path, diff } = item.operation;
  if (typeof path !== 'string' || path === '') return null;
  switch (type) {
    case 'create_file': {
      const content = typeof diff === 'string' ? createdContent(diff) : null;
      return {
        type: 'artifact_recorded',
        path,
        action: 'created',
        digest: content === null ? null : contentDigest(content),
      };
    }
    case 'update_file':
      // An update diff gives only the changed hunks: the content after it is not known here.
      return { type: 'artifact_recorded', path, action: 'modified', digest: null };
    case 'delete_file':
      return { type: 'artifact_recorded', path, action: 'deleted', digest: null };
    default:
      return null;
  }
}
