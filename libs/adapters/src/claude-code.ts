import { TidemarkCoreError, type StateChange, type TurnRole } from '@tidemark/core';
import {
  artifactOf,
  blocksOf,
  classify,
  closed,
  denialChanges,
  denialOf,
  gist,
  isOnlyToolResults,
  renderContent,
  renderResult,
  timestampOf,
  type ToolCall,
} from './claude-code-lines.js';
import {
  polledShell,
  shellPollers,
  shellStoppers,
  startedShell,
  stoppedShell,
  type EndedShell,
} from './claude-code-shells.js';
import { isRecord, text, type JsonRecord } from './json.js';
import { argumentsDetail, TurnBuilder } from './turns.js';
import type { Conversion, ConvertOptions, Skipped } from './types.js';

// Claude Code session files (~/.claude/projects/<project>/<session>.jsonl) → TurnEvents. One turn per
// user/assistant line of the main thread, in file order; tool calls, their results, file writes and
// background shells become state changes, read only from structured fields (block types, tool inputs,
// `toolUseResult`, `toolDenialKind`), never from prose. Claude Code's own compaction lines (summary,
// compact_boundary, the compact summary message) are kept as system turns with no changes: they are a
// model's retelling, not a record of what happened. Everything a turn says depends only on the lines
// before it, so a prefix of the file converts to a prefix of the turns and a growing file can be
// followed. The mapping, with its sources, is in README.md.
//
// This file follows the file: the lines pushed so far, the calls, shells and paths they opened. What
// one line is and says is read by claude-code-lines.ts, what a call says of a background shell by
// claude-code-shells.ts.

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
  push(line: string): void {
    const at = this.#lineNumber + 1;
    const value = parseClaudeCodeLine(line, at);
    this.#lineNumber = at;
    if (value === null) return this.#skip(at, 'blank line');
    if (!isRecord(value)) return this.#skip(at, 'not a JSON object');
    const kind = classify(value);
    if (kind.type === 'skip') return this.#skip(at, kind.reason);
    const repeated = this.#repeatOf(value, at);
    if (repeated !== null) return this.#skip(at, repeated);
    const timestamp = timestampOf(value) ?? this.#lastTimestamp;
    this.#lastTimestamp = timestamp;
    const id = text(value.uuid);
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
  #repeatOf(line: JsonRecord, at: number): string | null {
    const uuid = text(line.uuid);
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
      const id = text(block.id);
      const name = text(block.name);
      // An id seen before is the same call logged again; opening it twice would be refused.
      if (id === null || name === null || this.#calls.has(id)) continue;
      const input = isRecord(block.input) ? block.input : {};
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
  #resultsOf(line: JsonRecord, content: unknown): StateChange[] {
    const results = blocksOf(content).filter((block) => block.type === 'tool_result');
    // `toolUseResult` and `toolDenialKind` are fields of the line, not of a block: they can only be
    // attributed when the line answers exactly one call (as Claude Code writes results).
    const meta = results.length === 1 ? line : null;
    return results.flatMap((block) => this.#resultChanges(block, meta));
  }

  #resultChanges(block: JsonRecord, meta: JsonRecord | null): StateChange[] {
    const call = this.#calls.get(text(block.tool_use_id) ?? '');
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
  #effectsOf(call: ToolCall, result: unknown, output: string): StateChange[] {
    const artifact = artifactOf(call, isRecord(result) ? result : null, this.#paths);
    if (artifact !== null) {
      this.#paths.add(artifact.path);
      return [artifact];
    }
    if (call.name === 'Bash') return this.#shellStarted(call, result, output);
    if (shellPollers.has(call.name)) return this.#shellEnded(polledShell(call, result));
    if (shellStoppers.has(call.name)) return this.#shellEnded(stoppedShell(call, result));
    return [];
  }

  #shellStarted(call: ToolCall, result: unknown, output: string): StateChange[] {
    const shell = startedShell(call, result, output);
    if (shell === null) return [];
    const itemId = subprocessItemId(call.id);
    if (shell.handle !== null) this.#shells.set(shell.handle, itemId);
    return [{ type: 'item_opened', itemId, kind: 'subprocess', ...shell }];
  }

  #shellEnded(shell: EndedShell | null): StateChange[] {
    const itemId = shell === null ? undefined : this.#shells.get(shell.handle);
    if (shell === null || itemId === undefined) return [];
    this.#shells.delete(shell.handle);
    return [closed(itemId, shell.outcome, shell.detail)];
  }
}

/** The lines of a file's text; the empty string after a final newline is not a line. */
export function linesOf(text: string): string[] {
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
