import {
  TidemarkCoreError,
  type ArtifactAction,
  type ArtifactRecorded,
  type ItemOutcome,
  type StateChange,
  type TurnRole,
} from '@tidemark/core';
import { argumentsDetail, contentDigest, TurnBuilder } from './turns.js';
import type { Conversion, ConvertOptions, Skipped } from './types.js';

// Claude Code session files (~/.claude/projects/<project>/<session>.jsonl) → TurnEvents. One turn per
// user/assistant line of the main thread, in file order; tool calls, their results, file writes and
// background shells become state changes, read only from structured fields (block types, tool inputs,
// `toolUseResult`, `toolDenialKind`), never from prose. Claude Code's own compaction lines (summary,
// compact_boundary, the compact summary message) are kept as system turns with no changes: they are a
// model's retelling, not a record of what happened. Everything a turn says depends only on the lines
// before it, so a prefix of the file converts to a prefix of the turns and a growing file can be
// followed. The mapping, with its sources, is in docs/claude-code.md.

type JsonObject = Record<string, unknown>;

/** Line types Claude Code writes that carry no conversation: UI state, backups, bookkeeping. */
const metadataLineTypes = new Set([
  'file-history-snapshot',
  'queue-operation',
  'progress',
  'attachment',
  'custom-title',
  'ai-title',
  'agent-name',
  'last-prompt',
  'permission-mode',
  'mode',
  'tag',
  'pr-link',
]);

/**
 * The fixed `toolUseResult` Claude Code writes on the result of a tool use the user rejected, in
 * versions that predate `toolDenialKind` (those write both). It is Claude Code's own marker, not tool
 * output, so matching it is not matching free text.
 */
const legacyRejectionMarker = 'User rejected tool use';

/** `toolDenialKind` values that mean the call was stopped, not refused (Esc during a running tool). */
const interruptionKinds = new Set(['interrupted', 'cancelled']);

/** A background shell's status, as BashOutput / TaskOutput report it, when it has ended. */
const endedStatus: Readonly<Record<string, ItemOutcome>> = {
  completed: 'ok',
  failed: 'error',
  killed: 'cancelled',
  stopped: 'cancelled',
};

/** Tools that end a background shell by its id. */
const shellStoppers = new Set(['KillShell', 'KillBash', 'TaskStop']);
/** Tools that report a background shell's status by its id. */
const shellPollers = new Set(['BashOutput', 'TaskOutput']);

/** The subprocess item of a background Bash call: the call's own id is its tool_call item's. */
export function subprocessItemId(toolUseId: string): string {
  return `${toolUseId}:subprocess`;
}

/**
 * One line of a session file, parsed: the JSON value, or null for a blank line. A line that is not JSON
 * is an error naming its 1-based line number (the file is broken there, or still being written).
 */
export function parseClaudeCodeLine(text: string, lineNumber: number): unknown {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new TidemarkCoreError('invalid_input', `line ${lineNumber}: not valid JSON`, { cause: error });
  }
}

/** Converts a Claude Code session file's text (complete lines; a trailing newline is optional). */
export function fromClaudeCode(jsonl: string, options: ConvertOptions): Conversion {
  const converter = new ClaudeCodeConverter(options);
  for (const line of linesOf(jsonl)) converter.push(line);
  return converter.conversion;
}

/**
 * Converts a session file line by line, for a caller that follows a growing file: push each complete
 * line as it appears; `conversion` is always what `fromClaudeCode` gives for the lines pushed so far.
 */
export class ClaudeCodeConverter {
  readonly #builder: TurnBuilder;
  readonly #skipped: Skipped[] = [];
  /** Every tool call seen, by tool_use id. */
  readonly #calls = new Map<string, ToolCall>();
  /** Open background shells: the runtime's id for the shell → the subprocess item id. */
  readonly #shells = new Map<string, string>();
  /** Paths the session has recorded as artifacts. */
  readonly #paths = new Set<string>();
  /** The line each uuid was first seen on. */
  readonly #uuids = new Map<string, number>();
  #lineNumber = 0;
  #lastTimestamp: number | null = null;

  constructor(options: ConvertOptions) {
    this.#builder = new TurnBuilder('claude-code', options);
  }

  /**
   * Reads the next line (without its newline). Throws on a line that is not JSON, naming it, and
   * changes nothing then: pushing the line again once it is fixed carries on where it stopped.
   */
  push(text: string): void {
    const at = this.#lineNumber + 1;
    const value = parseClaudeCodeLine(text, at);
    this.#lineNumber = at;
    if (value === null) return this.#skip(at, 'blank line');
    if (!isObject(value)) return this.#skip(at, 'not a JSON object');
    const kind = classify(value);
    if (kind.type === 'skip') return this.#skip(at, kind.reason);
    const repeated = this.#repeatOf(value, at);
    if (repeated !== null) return this.#skip(at, repeated);
    const timestamp = timestampOf(value) ?? this.#lastTimestamp;
    this.#lastTimestamp = timestamp;
    const id = stringField(value, 'uuid');
    if (kind.type === 'compaction') {
      this.#builder.add({ role: 'system', content: kind.text, changes: [], message: value, id, timestamp });
      return;
    }
    const content = kind.message.content;
    const changes = kind.role === 'assistant' ? this.#callsOpened(content) : this.#resultsOf(value, content);
    const role: TurnRole = kind.role === 'user' && isOnlyToolResults(content) ? 'tool' : kind.role;
    this.#builder.add({ role, content: renderContent(content), changes, message: value, id, timestamp });
  }

  /** Lines read so far. */
  get lines(): number {
    return this.#lineNumber;
  }

  get conversion(): Conversion {
    return { turns: [...this.#builder.turns], skipped: [...this.#skipped] };
  }

  #skip(at: number, reason: string): void {
    this.#skipped.push({ at, reason });
  }

  /** Claude Code sometimes logs a message twice (on resume); the second copy is not a new turn. */
  #repeatOf(line: JsonObject, at: number): string | null {
    const uuid = stringField(line, 'uuid');
    if (uuid === null) return null;
    const first = this.#uuids.get(uuid);
    if (first !== undefined) return `repeats line ${first} (uuid ${uuid})`;
    this.#uuids.set(uuid, at);
    return null;
  }

  /** An assistant line's tool_use blocks: one tool_call item each. */
  #callsOpened(content: unknown): StateChange[] {
    const changes: StateChange[] = [];
    for (const block of blocksOf(content)) {
      if (block.type !== 'tool_use') continue;
      const id = stringField(block, 'id');
      const name = stringField(block, 'name');
      // An id seen before is the same call logged again; opening it twice would be refused.
      if (id === null || name === null || this.#calls.has(id)) continue;
      const input = isObject(block.input) ? block.input : {};
      this.#calls.set(id, { id, name, input, open: true });
      changes.push({
        type: 'item_opened',
        itemId: id,
        kind: 'tool_call',
        name,
        detail: argumentsDetail(block.input),
        handle: null,
        logPath: null,
      });
    }
    return changes;
  }

  /** A user line's tool_result blocks: each closes its call, and may say what the call did. */
  #resultsOf(line: JsonObject, content: unknown): StateChange[] {
    const results = blocksOf(content).filter((block) => block.type === 'tool_result');
    // `toolUseResult` and `toolDenialKind` are fields of the line, not of a block: they can only be
    // attributed when the line answers exactly one call (as Claude Code writes results).
    const meta = results.length === 1 ? line : null;
    return results.flatMap((block) => this.#resultChanges(block, meta));
  }

  #resultChanges(block: JsonObject, meta: JsonObject | null): StateChange[] {
    const call = this.#calls.get(stringField(block, 'tool_use_id') ?? '');
    // A result for a call this file never opened (or already answered) changes nothing.
    if (call === undefined || !call.open) return [];
    call.open = false;
    const denial = denialOf(meta);
    if (denial !== null) return denialChanges(call, denial);
    if (block.is_error === true) {
      return [closed(call.id, 'error', gist(renderResult(block.content)))];
    }
    const result = meta === null ? null : meta.toolUseResult;
    return [closed(call.id, 'ok', null), ...this.#effectsOf(call, result, renderResult(block.content))];
  }

  /** What a call that succeeded did beyond returning: files written, shells started or ended. */
  #effectsOf(call: ToolCall, result: unknown, text: string): StateChange[] {
    const artifact = artifactOf(call, isObject(result) ? result : null, this.#paths);
    if (artifact !== null) {
      this.#paths.add(artifact.path);
      return [artifact];
    }
    if (call.name === 'Bash') return this.#shellStarted(call, result, text);
    if (shellPollers.has(call.name)) return this.#shellPolled(call, result);
    if (shellStoppers.has(call.name)) return this.#shellStopped(call, result);
    return [];
  }

  #shellStarted(call: ToolCall, result: unknown, text: string): StateChange[] {
    const handle = isObject(result) ? stringField(result, 'backgroundTaskId') : null;
    // A shell runs on after its call returned when it was asked to, or when Claude Code moved a
    // foreground command to the background (it then reports the shell's id all the same).
    if (call.input.run_in_background !== true && handle === null) return [];
    const itemId = subprocessItemId(call.id);
    if (handle !== null) this.#shells.set(handle, itemId);
    const command = stringField(call.input, 'command') ?? call.name;
    return [
      {
        type: 'item_opened',
        itemId,
        kind: 'subprocess',
        name: gist(firstLine(command), 120),
        detail: stringField(call.input, 'description'),
        handle,
        logPath: outputFileIn(text),
      },
    ];
  }

  #shellPolled(call: ToolCall, result: unknown): StateChange[] {
    if (!isObject(result)) return [];
    const task = isObject(result.task) ? result.task : result;
    const status = stringField(task, 'status');
    const outcome = status === null ? undefined : endedStatus[status];
    const handle = shellIdOf(call.input) ?? stringField(task, 'shellId') ?? stringField(task, 'task_id');
    if (outcome === undefined || handle === null) return [];
    const exitCode = typeof task.exitCode === 'number' ? ` (exit code ${task.exitCode})` : '';
    return this.#shellEnded(handle, outcome, `${status ?? ''}${exitCode}`);
  }

  #shellStopped(call: ToolCall, result: unknown): StateChange[] {
    // The kill tools answer `success: false` (not is_error) when the shell was not running.
    if (isObject(result) && result.success === false) return [];
    const handle = shellIdOf(call.input);
    if (handle === null) return [];
    return this.#shellEnded(handle, 'cancelled', `killed by ${call.name} ${call.id}`);
  }

  #shellEnded(handle: string, outcome: ItemOutcome, detail: string): StateChange[] {
    const itemId = this.#shells.get(handle);
    if (itemId === undefined) return [];
    this.#shells.delete(handle);
    return [closed(itemId, outcome, detail)];
  }
}

interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: JsonObject;
  open: boolean;
}

type LineKind =
  | { readonly type: 'message'; readonly role: 'user' | 'assistant'; readonly message: JsonObject }
  | { readonly type: 'compaction'; readonly text: string }
  | { readonly type: 'skip'; readonly reason: string };

/** What a line is: a message of the main thread, a compaction line, or something to skip (and why). */
function classify(line: JsonObject): LineKind {
  const type = stringField(line, 'type');
  // A subagent's own traffic (Task tool): its calls are its own, not the session's; the session's
  // Task call and its result stand for the whole subagent run.
  if (line.isSidechain === true) return { type: 'skip', reason: `sidechain (subagent) ${type ?? 'line'}` };
  switch (type) {
    case 'user':
    case 'assistant': {
      if (!isObject(line.message)) return { type: 'skip', reason: `${type} line without a message` };
      if (line.isCompactSummary === true) {
        return { type: 'compaction', text: renderContent(line.message.content) };
      }
      return { type: 'message', role: type, message: line.message };
    }
    case 'summary':
      return { type: 'compaction', text: stringField(line, 'summary') ?? '' };
    case 'system': {
      const subtype = stringField(line, 'subtype');
      if (subtype === 'compact_boundary') {
        return { type: 'compaction', text: stringField(line, 'content') ?? 'Conversation compacted' };
      }
      return { type: 'skip', reason: `system line (${subtype ?? 'no subtype'}): metadata` };
    }
    case null:
      return { type: 'skip', reason: 'line without a type' };
    default:
      if (metadataLineTypes.has(type)) return { type: 'skip', reason: `${type} line: metadata` };
      return { type: 'skip', reason: `unknown line type ${type}` };
  }
}

interface Denial {
  /** Who refused the call, as a phrase; null when the call was interrupted rather than refused. */
  readonly refusedBy: string | null;
}

/** Whether Claude Code records the call as not run: refused (by the user, a rule) or interrupted. */
function denialOf(meta: JsonObject | null): Denial | null {
  if (meta === null) return null;
  const kind = stringField(meta, 'toolDenialKind');
  if (kind !== null) {
    if (interruptionKinds.has(kind)) return { refusedBy: null };
    if (kind === 'user-rejected') return { refusedBy: 'the user' };
    if (kind === 'permission-rule') return { refusedBy: 'a permission rule' };
    return { refusedBy: `Claude Code (${kind})` };
  }
  if (meta.toolUseResult === legacyRejectionMarker) return { refusedBy: 'the user' };
  return null;
}

function denialChanges(call: ToolCall, denial: Denial): StateChange[] {
  if (denial.refusedBy === null) return [closed(call.id, 'cancelled', 'interrupted')];
  const reason = `${denial.refusedBy} rejected ${call.name}${subjectOf(call)}`;
  return [
    closed(call.id, 'cancelled', reason),
    { type: 'item_disposed', itemKey: call.id, disposition: 'rejected', reason, supersededBy: null },
  ];
}

/** What a call was about, for a reason a reader can act on: ": <command or path>", or nothing. */
function subjectOf(call: ToolCall): string {
  const subject =
    stringField(call.input, 'command') ??
    stringField(call.input, 'file_path') ??
    stringField(call.input, 'notebook_path');
  return subject === null ? '' : `: ${gist(firstLine(subject))}`;
}

/** The artifact a successful file tool call recorded, or null for any other call. */
function artifactOf(
  call: ToolCall,
  result: JsonObject | null,
  paths: ReadonlySet<string>,
): ArtifactRecorded | null {
  const input = call.input;
  switch (call.name) {
    case 'Write': {
      const path = stringField(input, 'file_path');
      if (path === null) return null;
      const content = stringField(input, 'content');
      return artifact(
        path,
        writeAction(result, paths.has(path)),
        content === null ? null : contentDigest(content),
      );
    }
    case 'Edit':
    case 'MultiEdit': {
      const path = stringField(input, 'file_path');
      // The result carries the file before the edit (originalFile) and a patch; only a result that
      // carries the content after it gives a digest.
      const after = result === null ? null : stringField(result, 'content');
      return path === null ? null : artifact(path, 'modified', after === null ? null : contentDigest(after));
    }
    case 'NotebookEdit': {
      const path = stringField(input, 'notebook_path');
      return path === null ? null : artifact(path, 'modified', null);
    }
    default:
      return null;
  }
}

/**
 * Write creates or overwrites: its result says which (`type` create / update). Without one, a path this
 * session already recorded is modified, and any other is taken as created (Write is what Claude Code
 * uses for new files; an existing one must be read first and is usually edited).
 */
function writeAction(result: JsonObject | null, recordedBefore: boolean): ArtifactAction {
  const type = result === null ? null : stringField(result, 'type');
  if (type === 'create') return 'created';
  if (type === 'update') return 'modified';
  return recordedBefore ? 'modified' : 'created';
}

function artifact(path: string, action: ArtifactAction, digest: string | null): ArtifactRecorded {
  return { type: 'artifact_recorded', path, action, digest };
}

function closed(itemId: string, outcome: ItemOutcome, detail: string | null): StateChange {
  return { type: 'item_closed', itemId, outcome, detail };
}

/** The background shell a poll or kill names (the input field differs across Claude Code versions). */
function shellIdOf(input: JsonObject): string | null {
  return stringField(input, 'bash_id') ?? stringField(input, 'shell_id') ?? stringField(input, 'task_id');
}

/**
 * The output file of a background shell, from the sentence Claude Code itself writes in the launch
 * result ("… Output is being written to: <path>"); versions that keep the output in memory write none.
 */
function outputFileIn(text: string): string | null {
  const match = /Output is being written to: (\S+)/.exec(text);
  return match?.[1]?.replace(/\.$/, '') ?? null;
}

function timestampOf(line: JsonObject): number | null {
  const text = stringField(line, 'timestamp');
  if (text === null) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

/** A message's text as the model saw or produced it; thinking is left out, other blocks are named. */
function renderContent(content: unknown): string {
  if (typeof content === 'string') return content;
  return blocksOf(content)
    .map(renderBlock)
    .filter((text) => text !== null)
    .join('\n');
}

function renderBlock(block: JsonObject): string | null {
  switch (block.type) {
    case 'text':
      return stringField(block, 'text') ?? '';
    case 'thinking':
    case 'redacted_thinking':
      return null;
    case 'tool_use':
      return `[tool_use ${stringField(block, 'name') ?? ''} ${stringField(block, 'id') ?? ''}] ${
        argumentsDetail(block.input) ?? ''
      }`;
    case 'tool_result': {
      const error = block.is_error === true ? ' error' : '';
      return `[tool_result ${stringField(block, 'tool_use_id') ?? ''}${error}] ${renderResult(block.content)}`;
    }
    default:
      return `[${typeof block.type === 'string' ? block.type : 'block'}]`;
  }
}

/** A tool_result's content: a string, or text and image blocks. */
function renderResult(content: unknown): string {
  if (content === undefined || content === null) return '';
  return renderContent(content);
}

function isOnlyToolResults(content: unknown): boolean {
  const blocks = blocksOf(content);
  return blocks.length > 0 && blocks.every((block) => block.type === 'tool_result');
}

function blocksOf(content: unknown): JsonObject[] {
  return Array.isArray(content) ? content.filter(isObject) : [];
}

/** The lines of a file's text; the empty string after a final newline is not a line. */
export function linesOf(text: string): string[] {
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

/** A short excerpt for an item's detail or a reason. */
function gist(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function stringField(object: JsonObject, field: string): string | null {
  const value = object[field];
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
