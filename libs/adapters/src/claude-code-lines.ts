import type { ArtifactAction, ArtifactRecorded, ItemOutcome, StateChange } from '@tidemark/core';
import { isRecord, text, type JsonRecord } from './json.js';
import { argumentsDetail, contentDigest } from './turns.js';

// What one line of a Claude Code session file is and says, read from structured fields only (line and
// block types, tool inputs, `toolUseResult`, `toolDenialKind`): its kind, its text, and what a tool
// call it answers did (refused, wrote a file; background shells are read by claude-code-shells.ts). Nothing here keeps
// state across lines: ClaudeCodeConverter (claude-code.ts) does, and calls these. The mapping, with its
// sources, is in README.md (Claude Code session files).

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

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: JsonRecord;
  open: boolean;
}

export type LineKind =
  | { readonly type: 'message'; readonly role: 'user' | 'assistant'; readonly message: JsonRecord }
  | { readonly type: 'compaction'; readonly text: string }
  | { readonly type: 'skip'; readonly reason: string };

/** What a line is: a message of the main thread, a compaction line, or something to skip (and why). */
export function classify(line: JsonRecord): LineKind {
  const type = text(line.type);
  // A subagent's own traffic (Task tool): its calls are its own, not the session's; the session's
  // Task call and its result stand for the whole subagent run.
  if (line.isSidechain === true) return { type: 'skip', reason: `sidechain (subagent) ${type ?? 'line'}` };
  switch (type) {
    case 'user':
    case 'assistant': {
      if (!isRecord(line.message)) return { type: 'skip', reason: `${type} line without a message` };
      if (line.isCompactSummary === true) {
        return { type: 'compaction', text: renderContent(line.message.content) };
      }
      return { type: 'message', role: type, message: line.message };
    }
    case 'summary':
      return { type: 'compaction', text: text(line.summary) ?? '' };
    case 'system': {
      const subtype = text(line.subtype);
      if (subtype === 'compact_boundary') {
        return { type: 'compaction', text: text(line.content) ?? 'Conversation compacted' };
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
export function denialOf(meta: JsonRecord | null): Denial | null {
  if (meta === null) return null;
  const kind = text(meta.toolDenialKind);
  if (kind !== null) {
    if (interruptionKinds.has(kind)) return { refusedBy: null };
    if (kind === 'user-rejected') return { refusedBy: 'the user' };
    if (kind === 'permission-rule') return { refusedBy: 'a permission rule' };
    return { refusedBy: `Claude Code (${kind})` };
  }
  if (meta.toolUseResult === legacyRejectionMarker) return { refusedBy: 'the user' };
  return null;
}

export function denialChanges(call: ToolCall, denial: Denial): StateChange[] {
  if (denial.refusedBy === null) return [closed(call.id, 'cancelled', 'interrupted')];
  const reason = `${denial.refusedBy} rejected ${call.name}${subjectOf(call)}`;
  return [
    closed(call.id, 'cancelled', reason),
    { type: 'item_disposed', itemKey: call.id, disposition: 'rejected', reason, supersededBy: null },
  ];
}

/** What a call was about, for a reason a reader can act on: ": <command or path>", or nothing. */
function subjectOf(call: ToolCall): string {
  const subject = text(call.input.command) ?? text(call.input.file_path) ?? text(call.input.notebook_path);
  return subject === null ? '' : `: ${gist(firstLine(subject))}`;
}

/** The artifact a successful file tool call recorded, or null for any other call. */
export function artifactOf(
  call: ToolCall,
  result: JsonRecord | null,
  paths: ReadonlySet<string>,
): ArtifactRecorded | null {
  const input = call.input;
  switch (call.name) {
    case 'Write': {
      const path = text(input.file_path);
      if (path === null) return null;
      const content = text(input.content);
      return artifact(
        path,
        writeAction(result, paths.has(path)),
        content === null ? null : contentDigest(content),
      );
    }
    case 'Edit':
    case 'MultiEdit': {
      const path = text(input.file_path);
      // The result carries the file before the edit (originalFile) and a patch; only a result that
      // carries the content after it gives a digest.
      const after = result === null ? null : text(result.content);
      return path === null ? null : artifact(path, 'modified', after === null ? null : contentDigest(after));
    }
    case 'NotebookEdit': {
      const path = text(input.notebook_path);
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
function writeAction(result: JsonRecord | null, recordedBefore: boolean): ArtifactAction {
  const type = result === null ? null : text(result.type);
  if (type === 'create') return 'created';
  if (type === 'update') return 'modified';
  return recordedBefore ? 'modified' : 'created';
}

function artifact(path: string, action: ArtifactAction, digest: string | null): ArtifactRecorded {
  return { type: 'artifact_recorded', path, action, digest };
}

export function closed(itemId: string, outcome: ItemOutcome, detail: string | null): StateChange {
  return { type: 'item_closed', itemId, outcome, detail };
}

export function timestampOf(line: JsonRecord): number | null {
  const stamp = text(line.timestamp);
  if (stamp === null) return null;
  const ms = Date.parse(stamp);
  return Number.isNaN(ms) ? null : ms;
}

/** A message's text as the model saw or produced it; thinking is left out, other blocks are named. */
export function renderContent(content: unknown): string {
  if (typeof content === 'string') return content;
  return blocksOf(content)
    .map(renderBlock)
    .filter((text) => text !== null)
    .join('\n');
}

function renderBlock(block: JsonRecord): string | null {
  switch (block.type) {
    case 'text':
      return text(block.text) ?? '';
    case 'thinking':
    case 'redacted_thinking':
      return null;
    case 'tool_use':
      return `[tool_use ${text(block.name) ?? ''} ${text(block.id) ?? ''}] ${
        argumentsDetail(block.input) ?? ''
      }`;
    case 'tool_result': {
      const error = block.is_error === true ? ' error' : '';
      return `[tool_result ${text(block.tool_use_id) ?? ''}${error}] ${renderResult(block.content)}`;
    }
    default:
      return `[${typeof block.type === 'string' ? block.type : 'block'}]`;
  }
}

/** A tool_result's content: a string, or text and image blocks. */
export function renderResult(content: unknown): string {
  if (content === undefined || content === null) return '';
  return renderContent(content);
}

export function isOnlyToolResults(content: unknown): boolean {
  const blocks = blocksOf(content);
  return blocks.length > 0 && blocks.every((block) => block.type === 'tool_result');
}

export function blocksOf(content: unknown): JsonRecord[] {
  return Array.isArray(content) ? content.filter(isRecord) : [];
}

export function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

/** A short excerpt for an item's detail or a reason. */
export function gist(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
