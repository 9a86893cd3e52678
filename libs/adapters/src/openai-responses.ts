import {
  canonicalJson,
  contextHashOf,
  type ItemKind,
  type ResumeMessage,
  type StateChange,
  type TurnRole,
} from '@tidemark/core';
import type {
  ResponseInputContent,
  ResponseInputItem,
  ResponseFunctionShellCallOutputContent,
} from 'openai/resources/responses/responses';
import {
  answeringOutput,
  answerOf,
  callOf,
  isCallType,
  trailingCallsFrom,
  type CallType,
  type OutputType,
} from './check-openai-responses.js';
import { argumentsDetail, contentDigest, TurnBuilder } from './turns.js';
import type { Context, Conversion, ConvertOptions, Skipped } from './types.js';

// OpenAI Responses: an input/output item list in, TurnEvents out (one turn per item); a resume context
// in, a request body part (`instructions`, `input`) out that the API accepts. State changes come from
// the items' structure only (call ids, statuses, exit codes, approval decisions), never from their text.
// The mapping is documented in docs/openai-responses.md.

type Item = Readonly<Record<string, unknown>>;

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
  if (!isItem(item)) return { skip: 'not an object' };
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
  if (item.type !== 'apply_patch_call' || !isItem(item.operation)) return null;
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

/**
 * A create_file diff gives the whole file when every line is an added line: the V4A create syntax,
 * read as the Agents SDK's applyDiff(…, 'create') reads it (lines without their '+', joined by '\n',
 * a final empty line dropped). Anything else is not the full content, and the digest stays unknown.
 */
function createdContent(diff: string): string | null {
  const lines = diff.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines.every((line) => line.startsWith('+')) ? lines.map((line) => line.slice(1)).join('\n') : null;
}

// ---------------------------------------------------------------------------------------------------
// Calls and outputs, as both directions read them

interface CallView {
  readonly callId: string;
  readonly kind: ItemKind;
  /** ItemOpened.name: the tool, or the command of a shell call. */
  readonly itemName: string;
  readonly detail: string | null;
  /** The call as a turn's text: `name(args)`. */
  readonly rendered: string;
  /** Shorter, for restating a call whose result is not in a context. */
  readonly summary: string;
  /** Why the call itself says it failed, or null. */
  readonly failure: string | null;
}

function callView(item: Item): CallView | null {
  const callId = text(item.call_id);
  if (callId === null) return null;
  const failure = item.status === 'incomplete' ? 'call status incomplete' : null;
  const tool = (itemName: string, args: string, detail: unknown): CallView => ({
    callId,
    kind: 'tool_call',
    itemName,
    detail: argumentsDetail(detail),
    rendered: `${itemName}(${args})`,
    summary: `${itemName}(${args})`,
    failure,
  });
  const shell = (command: string, tool: string): CallView => ({
    callId,
    kind: 'subprocess',
    itemName: command,
    detail: argumentsDetail(item.action),
    rendered: `${tool}(${command})`,
    summary: `${tool}(${command})`,
    failure,
  });
  const action = isItem(item.action) ? item.action : {};
  switch (item.type) {
    case 'function_call': {
      const name = text(item.name);
      return name === null ? null : tool(name, argumentsText(item.arguments), item.arguments);
    }
    case 'custom_tool_call': {
      const name = text(item.name);
      return name === null ? null : tool(name, argumentsText(item.input), item.input);
    }
    case 'local_shell_call': {
      const command = strings(action.command);
      return command === null ? null : shell(command.join(' '), 'local_shell');
    }
    case 'shell_call': {
      const commands = strings(action.commands);
      return commands === null ? null : shell(commands.join('; '), 'shell');
    }
    case 'apply_patch_call': {
      const operation = isItem(item.operation) ? item.operation : {};
      const target = `${String(operation.type)} ${String(operation.path)}`;
      const diff = text(operation.diff);
      return {
        ...tool('apply_patch', target, item.operation),
        rendered: diff === null ? `apply_patch(${target})` : `apply_patch(${target})\n${diff}`,
      };
    }
    default:
      return null;
  }
}

interface OutputView {
  readonly type: OutputType;
  readonly callId: string;
  readonly text: string;
  /** Why the output says the call failed, or null. */
  readonly failure: string | null;
}

function outputView(item: Item): OutputView | null {
  const answer = answerOf(item);
  if (answer === null) return null;
  const incomplete = item.status === 'incomplete' ? 'output status incomplete' : null;
  const view = (output: string, failure: string | null): OutputView => ({ ...answer, text: output, failure });
  switch (answer.type) {
    case 'function_call_output':
    case 'custom_tool_call_output':
      return view(toolOutputText(item.output), incomplete);
    case 'local_shell_call_output': {
      const output = str(item.output);
      const exit = exitCodeIn(output);
      return view(output, incomplete ?? (exit !== null && exit !== 0 ? `exit code ${exit}` : null));
    }
    case 'shell_call_output': {
      const chunks = Array.isArray(item.output) ? (item.output as readonly unknown[]).filter(isItem) : [];
      return view(
        chunks.map(shellChunkText).join('\n'),
        incomplete ?? chunks.map(shellFailure).find(Boolean) ?? null,
      );
    }
    case 'apply_patch_call_output':
      return view(
        text(item.output) ?? `apply_patch ${String(item.status)}`,
        item.status === 'failed' ? 'apply_patch failed' : null,
      );
    default: {
      const never: never = answer.type;
      throw new TypeError(`unknown output type ${String(never)}`);
    }
  }
}

function shellChunkText(chunk: Item): string {
  return [text(chunk.stdout), text(chunk.stderr)].filter((part) => part !== null).join('\n');
}

function shellFailure(chunk: Item): string | null {
  const outcome = isItem(chunk.outcome) ? chunk.outcome : {};
  if (outcome.type === 'timeout') return 'timeout';
  return typeof outcome.exit_code === 'number' && outcome.exit_code !== 0
    ? `exit code ${outcome.exit_code}`
    : null;
}

/**
 * The exit code a local shell output carries: it is "a JSON string of the output"; Codex writes
 * `{output, metadata: {exit_code}}`, others `{exit_code}`. Null when it carries none.
 */
function exitCodeIn(output: string): number | null {
  const parsed = parseJson(output);
  if (!isItem(parsed)) return null;
  const metadata = isItem(parsed.metadata) ? parsed.metadata : {};
  const code = parsed.exit_code ?? metadata.exit_code;
  return typeof code === 'number' ? code : null;
}

function approvalText(requestId: string, approve: boolean, reason: string | null): string {
  return `[approval ${approve ? 'granted' : 'denied'}] ${requestId}${reason === null ? '' : `: ${reason}`}`;
}

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

// ---------------------------------------------------------------------------------------------------
// Reading JSON values

function isItem(value: unknown): value is Item {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An item's type; a message may leave it out (EasyInputMessage). Empty when there is none. */
function itemType(item: Item): string {
  if (typeof item.type === 'string') return item.type;
  return item.type === undefined && item.role !== undefined ? 'message' : '';
}

/** A string field, or empty. */
function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Arguments as the model wrote them: a string as it is, anything else as canonical JSON. */
function argumentsText(value: unknown): string {
  return value === undefined || value === null || typeof value === 'string'
    ? str(value)
    : canonicalJson(value);
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function strings(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const list = value as readonly unknown[];
  return list.every((v) => typeof v === 'string') ? [...list] : null;
}

function stringRecord(value: Item): Record<string, string> {
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' ? value : null;
}

function callStatus(value: unknown): 'in_progress' | 'completed' | 'incomplete' {
  return value === 'in_progress' || value === 'incomplete' ? value : 'completed';
}

function mcpStatus(value: unknown): 'in_progress' | 'completed' | 'incomplete' | 'calling' | 'failed' | null {
  return value === 'in_progress' ||
    value === 'completed' ||
    value === 'incomplete' ||
    value === 'calling' ||
    value === 'failed'
    ? value
    : null;
}

/** `{ [key]: value }` when the value is there, else nothing: absent, not null, keeps the bytes small. */
function optional<K extends string, V>(key: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [key]: value }) as { [P in K]?: V };
}

/** The text parts of a content list (input_text, output_text, refusal, summary_text …), joined. */
function partsText(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  return (content as readonly unknown[])
    .filter(isItem)
    .map((part) => text(part.text) ?? text(part.refusal))
    .filter((part) => part !== null)
    .join('\n');
}

/** A tool output as text: a string as it is, a list of parts as its text parts (images and files left out). */
function toolOutputText(output: unknown): string {
  return typeof output === 'string' ? output : (partsText(output) ?? '');
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return null;
  }
}
