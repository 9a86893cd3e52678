import { foldTurns, type StateChange } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { ClaudeCodeConverter, fromClaudeCode, subprocessItemId } from '../src/claude-code.js';
import { artifactsOf, expectationOf, fixtureText, itemsOf } from './fixtures.js';

// The Claude Code adapter against a hand-written session file and its hand-checked expectation, then
// the properties a follower of a growing file relies on, then the structured markers one by one.

const jsonl = fixtureText('claude-code.jsonl');
const expected = expectationOf<{
  readonly skipped: number;
  readonly skippedLines: readonly number[];
  readonly roles: Readonly<Record<string, readonly number[]>>;
}>('claude-code.jsonl');
const session = { tenantId: 'acme', sessionId: 'cc-fixture' };

function line(value: unknown): string {
  return JSON.stringify(value);
}

function assistantLine(uuid: string, content: unknown[]): string {
  return line({
    type: 'assistant',
    uuid,
    timestamp: '2025-11-04T10:00:00.000Z',
    message: { role: 'assistant', content },
  });
}

function resultLine(
  uuid: string,
  block: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): string {
  return line({
    type: 'user',
    uuid,
    timestamp: '2025-11-04T10:00:01.000Z',
    message: { role: 'user', content: [{ type: 'tool_result', ...block }] },
    ...extra,
  });
}

function changesOf(...lines: string[]): StateChange[][] {
  return fromClaudeCode(`${lines.join('\n')}\n`, session).turns.map((turn) => [...turn.changes]);
}

describe('fromClaudeCode on the fixture session', () => {
  const conversion = fromClaudeCode(jsonl, session);

  it('gives one turn per main-thread user/assistant/compaction line, with the roles read by hand', () => {
    expect(conversion.turns).toHaveLength(expected.turns);
    expect(conversion.turns.map((turn) => turn.seq)).toEqual(conversion.turns.map((_, index) => index + 1));
    const roles: Record<string, number[]> = { system: [], user: [], assistant: [], tool: [] };
    for (const turn of conversion.turns) roles[turn.role]!.push(turn.seq);
    expect(roles).toEqual(expected.roles);
  });

  it('opens, closes and disposes exactly the expected items', () => {
    expect(itemsOf(conversion.turns, { handles: true })).toEqual(expected.items);
  });

  it('records exactly the expected artifacts, on the turns of the successful results', () => {
    expect(artifactsOf(conversion.turns)).toEqual(expected.artifacts);
  });

  it('skips the metadata, unknown and sidechain lines, naming each', () => {
    expect(conversion.skipped).toHaveLength(expected.skipped);
    expect(conversion.skipped.map((skipped) => skipped.at)).toEqual(expected.skippedLines);
    expect(conversion.skipped.map((skipped) => skipped.reason)).toEqual([
      'file-history-snapshot line: metadata',
      'unknown line type agent-checkpoint',
      'sidechain (subagent) assistant',
      'sidechain (subagent) user',
    ]);
  });

  it('uses each line uuid as the turn id and its ISO timestamp as the time', () => {
    const first = JSON.parse(jsonl.split('\n')[2]!) as { uuid: string; timestamp: string };
    const turn = conversion.turns[1]!;
    expect(turn.turnId).toBe(`claude-code:${first.uuid}`);
    expect(turn.timestamp).toBe(Date.parse(first.timestamp));
    expect(turn.original).toMatchObject({ format: 'claude-code' });
  });

  it('makes only changes core folds without a rejection (no unknown item, no id opened twice)', () => {
    const { results } = foldTurns(session.tenantId, session.sessionId, conversion.turns);
    expect(results.filter((result) => !result.ok || result.rejected.length > 0)).toEqual([]);
  });

  it('says why the rejected call must not be repeated', () => {
    const disposal = conversion.turns
      .flatMap((turn) => turn.changes)
      .find((change) => change.type === 'item_disposed');
    expect(disposal).toEqual({
      type: 'item_disposed',
      itemKey: 'toolu_01Rj8rPv5SaB2tNy6eWg3JdQ',
      disposition: 'rejected',
      reason: 'the user rejected Bash: rm -rf node_modules package-lock.json && npm install',
      supersededBy: null,
    });
  });

  it('takes nothing from compaction lines: they are system turns with no changes', () => {
    const compaction = conversion.turns.filter((turn) => turn.role === 'system');
    expect(compaction.map((turn) => turn.changes)).toEqual([[], [], []]);
    expect(compaction[0]!.content).toBe('Invoice API: CSV export endpoint for invoices');
    expect(compaction[1]!.content).toBe('Conversation compacted');
    expect(compaction[2]!.content).toMatch(/^This session is being continued/);
  });
});

describe('converting a session file that grows', () => {
  it('gives identical turns for the same file, every time', () => {
    expect(fromClaudeCode(jsonl, session)).toStrictEqual(fromClaudeCode(jsonl, session));
  });

  it('turns every prefix of the file into a prefix of the turns (same seqs, same turn ids)', () => {
    const all = fromClaudeCode(jsonl, session);
    const lines = jsonl.trimEnd().split('\n');
    for (let count = 0; count <= lines.length; count += 1) {
      const prefix = fromClaudeCode(lines.slice(0, count).join('\n'), session);
      expect(prefix.turns).toStrictEqual(all.turns.slice(0, prefix.turns.length));
      expect(prefix.skipped).toStrictEqual(all.skipped.filter((skipped) => skipped.at <= count));
    }
  });

  it('converts line by line to what the whole file converts to', () => {
    const converter = new ClaudeCodeConverter(session);
    for (const text of jsonl.trimEnd().split('\n')) converter.push(text);
    expect(converter.conversion).toStrictEqual(fromClaudeCode(jsonl, session));
  });

  it('names the line that is not valid JSON', () => {
    const lines = jsonl.trimEnd().split('\n');
    const broken = [...lines.slice(0, 6), '{"type":"user","message":', ...lines.slice(6)].join('\n');
    expect(() => fromClaudeCode(broken, session)).toThrow('line 7: not valid JSON');
  });

  it('changes nothing on a broken line, so a follower carries on once it is fixed', () => {
    const lines = jsonl.trimEnd().split('\n');
    const converter = new ClaudeCodeConverter(session);
    for (const text of lines.slice(0, 6)) converter.push(text);
    expect(() => converter.push('{"type":"user","message":')).toThrow('line 7: not valid JSON');
    expect(() => converter.push('{still broken')).toThrow('line 7: not valid JSON');
    expect(converter.lines).toBe(6);
    for (const text of lines.slice(6)) converter.push(text);
    expect(converter.conversion).toStrictEqual(fromClaudeCode(jsonl, session));
  });

  it('ignores the empty string after a final newline, and lists a blank line in the middle', () => {
    const text = `${line({ type: 'user', uuid: 'u1', message: { role: 'user', content: 'hi' } })}\n\n`;
    const conversion = fromClaudeCode(
      `${text}${line({ type: 'user', uuid: 'u2', message: { role: 'user', content: 'there' } })}\n`,
      session,
    );
    expect(conversion.turns).toHaveLength(2);
    expect(conversion.skipped).toEqual([{ at: 2, reason: 'blank line' }]);
  });
});

describe('the structured markers, one at a time', () => {
  const call = (id: string, name: string, input: Record<string, unknown>) => ({
    type: 'tool_use',
    id,
    name,
    input,
  });

  it('reads a permission-rule denial (toolDenialKind) as a rejection', () => {
    const [, result] = changesOf(
      assistantLine('a1', [call('t1', 'Bash', { command: 'git push --force' })]),
      resultLine(
        'r1',
        { tool_use_id: 't1', is_error: true, content: 'Permission to use Bash has been denied.' },
        {
          toolDenialKind: 'permission-rule',
        },
      ),
    );
    expect(result).toEqual([
      {
        type: 'item_closed',
        itemId: 't1',
        outcome: 'cancelled',
        detail: 'a permission rule rejected Bash: git push --force',
      },
      {
        type: 'item_disposed',
        itemKey: 't1',
        disposition: 'rejected',
        reason: 'a permission rule rejected Bash: git push --force',
        supersededBy: null,
      },
    ]);
  });

  it('reads an interruption as a cancelled call, not a rejection', () => {
    const [, result] = changesOf(
      assistantLine('a1', [call('t1', 'Bash', { command: 'sleep 100' })]),
      resultLine(
        'r1',
        { tool_use_id: 't1', is_error: true, content: 'interrupted' },
        {
          toolUseResult: 'User rejected tool use',
          toolDenialKind: 'interrupted',
        },
      ),
    );
    expect(result).toEqual([
      { type: 'item_closed', itemId: 't1', outcome: 'cancelled', detail: 'interrupted' },
    ]);
  });

  it('never reads a rejection from the words of a result', () => {
    const [, result] = changesOf(
      assistantLine('a1', [call('t1', 'Bash', { command: 'cat notes.txt' })]),
      resultLine('r1', {
        tool_use_id: 't1',
        content: "The user doesn't want to proceed with this tool use.",
      }),
    );
    expect(result).toEqual([{ type: 'item_closed', itemId: 't1', outcome: 'ok', detail: null }]);
  });

  it('records no artifact for a failed write', () => {
    const [, result] = changesOf(
      assistantLine('a1', [call('t1', 'Write', { file_path: '/r/a.ts', content: 'x' })]),
      resultLine('r1', { tool_use_id: 't1', is_error: true, content: 'EACCES' }),
    );
    expect(result).toEqual([{ type: 'item_closed', itemId: 't1', outcome: 'error', detail: 'EACCES' }]);
  });

  it('reads a Write that overwrote a file (type update) as modified', () => {
    const [, result] = changesOf(
      assistantLine('a1', [call('t1', 'Write', { file_path: '/r/a.ts', content: 'export {};\n' })]),
      resultLine(
        'r1',
        { tool_use_id: 't1', content: 'ok' },
        { toolUseResult: { type: 'update', filePath: '/r/a.ts' } },
      ),
    );
    expect(result?.[1]).toMatchObject({ type: 'artifact_recorded', path: '/r/a.ts', action: 'modified' });
  });

  it('ends a background shell when TaskOutput reports it completed, with its log path', () => {
    const turns = changesOf(
      assistantLine('a1', [call('t1', 'Bash', { command: 'npm run build', run_in_background: true })]),
      resultLine(
        'r1',
        {
          tool_use_id: 't1',
          content:
            'Command running in background with ID: bx1. Output is being written to: /tmp/claude-0/x/tasks/bx1.output',
        },
        { toolUseResult: { stdout: '', stderr: '', backgroundTaskId: 'bx1' } },
      ),
      assistantLine('a2', [call('t2', 'TaskOutput', { task_id: 'bx1', block: true })]),
      resultLine(
        'r2',
        { tool_use_id: 't2', content: 'done' },
        {
          toolUseResult: {
            retrieval_status: 'success',
            task: { task_id: 'bx1', status: 'completed', exitCode: 0 },
          },
        },
      ),
    );
    expect(turns[1]).toContainEqual({
      type: 'item_opened',
      itemId: subprocessItemId('t1'),
      kind: 'subprocess',
      name: 'npm run build',
      detail: null,
      handle: 'bx1',
      logPath: '/tmp/claude-0/x/tasks/bx1.output',
    });
    expect(turns[3]).toContainEqual({
      type: 'item_closed',
      itemId: subprocessItemId('t1'),
      outcome: 'ok',
      detail: 'completed (exit code 0)',
    });
  });

  it('skips a message logged twice (same uuid), so its call is not opened again', () => {
    const again = assistantLine('a1', [call('t1', 'Read', { file_path: '/r/a.ts' })]);
    const conversion = fromClaudeCode(`${again}\n${again}\n`, session);
    expect(conversion.turns).toHaveLength(1);
    expect(conversion.skipped).toEqual([{ at: 2, reason: 'repeats line 1 (uuid a1)' }]);
  });

  it('leaves a background shell open when the kill tool says it did not kill it', () => {
    const turns = changesOf(
      assistantLine('a1', [call('t1', 'Bash', { command: 'npm run dev', run_in_background: true })]),
      resultLine(
        'r1',
        { tool_use_id: 't1', content: 'started' },
        { toolUseResult: { backgroundTaskId: 'b1' } },
      ),
      assistantLine('a2', [call('t2', 'KillShell', { shell_id: 'b1' })]),
      resultLine(
        'r2',
        { tool_use_id: 't2', content: 'no' },
        {
          toolUseResult: { success: false, message: 'Shell b1 is not running', shell_id: 'b1' },
        },
      ),
    );
    expect(turns[3]).toEqual([{ type: 'item_closed', itemId: 't2', outcome: 'ok', detail: null }]);
  });

  it('takes no state from a compact summary, even one holding tool blocks', () => {
    const [, , summary] = changesOf(
      assistantLine('a1', [call('t1', 'Write', { file_path: '/r/a.ts', content: 'x' })]),
      line({ type: 'system', subtype: 'compact_boundary', uuid: 'b1', content: 'Conversation compacted' }),
      line({
        type: 'user',
        uuid: 's1',
        isCompactSummary: true,
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'written' }] },
      }),
    );
    expect(summary).toEqual([]);
  });
});
