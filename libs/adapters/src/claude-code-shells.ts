import type { ItemOutcome } from '@tidemark/core';
import { firstLine, gist, type ToolCall } from './claude-code-lines.js';
import { isRecord, text, type JsonRecord } from './json.js';

// Claude Code's background shells, as the tool calls that start, poll and kill them say: a Bash call
// left running, a BashOutput / TaskOutput poll that reports one ended, a kill that ended one. Read from
// the calls' inputs and `toolUseResult` only; ClaudeCodeConverter (claude-code.ts) keeps which shells
// are open.

/** A background shell's status, as BashOutput / TaskOutput report it, when it has ended. */
const endedStatus: Readonly<Record<string, ItemOutcome>> = {
  completed: 'ok',
  failed: 'error',
  killed: 'cancelled',
  stopped: 'cancelled',
};

/** Tools that end a background shell by its id. */
export const shellStoppers = new Set(['KillShell', 'KillBash', 'TaskStop']);
/** Tools that report a background shell's status by its id. */
export const shellPollers = new Set(['BashOutput', 'TaskOutput']);

/** A background shell a Bash call left running, as its subprocess item names it. */
export interface StartedShell {
  readonly name: string;
  readonly detail: string | null;
  /** The runtime's id for the shell, when the result reports one. */
  readonly handle: string | null;
  readonly logPath: string | null;
}

/** The shell a successful Bash call left running, or null when it ran in the foreground and ended. */
export function startedShell(call: ToolCall, result: unknown, output: string): StartedShell | null {
  const handle = isRecord(result) ? text(result.backgroundTaskId) : null;
  // A shell runs on after its call returned when it was asked to, or when Claude Code moved a
  // foreground command to the background (it then reports the shell's id all the same).
  if (call.input.run_in_background !== true && handle === null) return null;
  const command = text(call.input.command) ?? call.name;
  return {
    name: gist(firstLine(command), 120),
    detail: text(call.input.description),
    handle,
    logPath: outputFileIn(output),
  };
}

/** A background shell that a poll or a kill says has ended: which one, how, and why. */
export interface EndedShell {
  readonly handle: string;
  readonly outcome: ItemOutcome;
  readonly detail: string;
}

/** The shell a successful BashOutput / TaskOutput call reports ended, or null (still running, or unsaid). */
export function polledShell(call: ToolCall, result: unknown): EndedShell | null {
  if (!isRecord(result)) return null;
  const task = isRecord(result.task) ? result.task : result;
  const status = text(task.status);
  const outcome = status === null ? undefined : endedStatus[status];
  const handle = shellIdOf(call.input) ?? text(task.shellId) ?? text(task.task_id);
  if (outcome === undefined || handle === null) return null;
  const exitCode = typeof task.exitCode === 'number' ? ` (exit code ${task.exitCode})` : '';
  return { handle, outcome, detail: `${status ?? ''}${exitCode}` };
}

/** The shell a successful kill call ended, or null. */
export function stoppedShell(call: ToolCall, result: unknown): EndedShell | null {
  // The kill tools answer `success: false` (not is_error) when the shell was not running.
  if (isRecord(result) && result.success === false) return null;
  const handle = shellIdOf(call.input);
  if (handle === null) return null;
  return { handle, outcome: 'cancelled', detail: `killed by ${call.name} ${call.id}` };
}

/** The background shell a poll or kill names (the input field differs across Claude Code versions). */
function shellIdOf(input: JsonRecord): string | null {
  return text(input.bash_id) ?? text(input.shell_id) ?? text(input.task_id);
}

/**
 * The output file of a background shell, from the sentence Claude Code itself writes in the launch
 * result ("… Output is being written to: <path>"); versions that keep the output in memory write none.
 */
function outputFileIn(text: string): string | null {
  const match = /Output is being written to: (\S+)/.exec(text);
  return match?.[1]?.replace(/\.$/, '') ?? null;
}
