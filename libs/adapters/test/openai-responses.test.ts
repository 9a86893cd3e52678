import { canonicalJson, contextHashOf, foldTurns, type ResumeContext, type TurnEvent } from '@tidemark/core';
import type {
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
} from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { checkOpenAIResponses } from '../src/check-openai-responses.js';
import { fromOpenAIResponses } from '../src/openai-responses.js';
import { toOpenAIResponses } from '../src/openai-responses-resume.js';
import { artifactsOf, contextAt, convertedFixture, itemsOf, validResumeAt } from './fixtures.js';

const { transcript, expected, options, turns, boundaries } = convertedFixture<
  readonly unknown[],
  { readonly skipped: readonly unknown[] }
>(
  'openai-responses.json',
  { tenantId: 'tenant-responses', sessionId: 'session-responses' },
  fromOpenAIResponses,
);

describe('fromOpenAIResponses', () => {
  it('converts the fixture to exactly the hand-checked items and artifacts', () => {
    const conversion = fromOpenAIResponses(transcript, options);
    expect(conversion.turns).toHaveLength(expected.turns);
    expect(conversion.skipped).toEqual(expected.skipped);
    expect(itemsOf(conversion.turns)).toEqual(expected.items);
    expect(artifactsOf(conversion.turns)).toEqual(expected.artifacts);
  });

  it('gives one turn per item, with its role, its text and the item id as turn id', () => {
    expect(turns.map((t) => t.seq)).toEqual(transcript.map((_, index) => index + 1));
    expect(turns.map((t) => t.role).join(' ')).toBe(
      'system user assistant assistant assistant tool tool assistant assistant tool assistant user ' +
        'assistant tool assistant tool assistant tool assistant assistant assistant tool tool user ' +
        'assistant tool assistant',
    );
    expect(turns[2]!.content).toContain('rounding happens');
    expect(turns[3]!.content).toBe('read_file({"path":"src/invoice.ts"})');
    expect(turns[14]!.content).toMatch(/^apply_patch\(create_file src\/money\.ts\)\n\+export/);
    expect(turns[18]!.content).toBe('local_shell(npx vitest --watch test/invoice.test.ts)');
    expect(turns[24]!.content).toMatch(/^sql\(SELECT id, total_cents/);
    expect(turns[3]!.turnId).toBe('openai-responses:fc_01');
    // An output without an id of its own: its call id, kept apart from its call's turn.
    expect(turns[5]!.turnId).toBe('openai-responses:call_read_1:output');
    expect(turns[22]!.turnId).toBe('openai-responses:call_watch_1');
    expect(turns.every((t) => t.original?.format === 'openai-responses')).toBe(true);
  });

  it('closes a call whose output status is incomplete with outcome error', () => {
    expect(turns[9]!.changes).toEqual([
      { type: 'item_closed', itemId: 'call_test_1', outcome: 'error', detail: 'output status incomplete' },
    ]);
  });

  it('cancels a denied approval request and records its rejection with the reason given', () => {
    expect(turns[11]!.changes).toEqual([
      { type: 'item_closed', itemId: 'mcpr_01', outcome: 'cancelled', detail: null },
      {
        type: 'item_disposed',
        itemKey: 'mcpr_01',
        disposition: 'rejected',
        reason: 'Nothing goes to the remote until the fix is reviewed.',
        supersededBy: null,
      },
    ]);
  });

  it('opens a local shell call as a subprocess whose handle is its call id', () => {
    expect(turns[18]!.changes).toEqual([
      {
        type: 'item_opened',
        itemId: 'call_watch_1',
        kind: 'subprocess',
        name: 'npx vitest --watch test/invoice.test.ts',
        detail: canonicalJson((transcript[18] as { action: unknown }).action),
        handle: 'call_watch_1',
        logPath: null,
      },
    ]);
  });

  it('makes only changes the fold accepts', () => {
    const { results } = foldTurns(options.tenantId, options.sessionId, turns);
    expect(results.filter((r) => !r.ok || r.rejected.length > 0)).toEqual([]);
  });

  it('gives identical turns for the same transcript', () => {
    const again = fromOpenAIResponses(transcript, options);
    expect(JSON.stringify(again.turns)).toBe(JSON.stringify(turns));
  });

  it('skips and lists what it does not understand, and converts the rest', () => {
    const items = [
      42,
      { type: 'web_search_call', id: 'ws_1', status: 'completed' },
      { type: 'function_call', name: 'read_file', arguments: '{}' },
      { type: 'message', role: 'critic', content: 'looks fine' },
      { type: 'mcp_approval_response', approval_request_id: 'mcpr_9' },
      { role: 'user', content: 'hello' },
      { type: 'function_call_output', call_id: 'call_nobody', output: 'an output for no call' },
    ];
    const { turns: converted, skipped } = fromOpenAIResponses(items, options);
    expect(skipped.map((s) => s.at)).toEqual([1, 2, 3, 4, 5]);
    expect(skipped[1]!.reason).toBe('unsupported item type "web_search_call"');
    expect(converted.map((t) => [t.seq, t.role, t.content, t.changes])).toEqual([
      [1, 'user', 'hello', []],
      [2, 'tool', 'an output for no call', []],
    ]);
  });

  it('reads exit codes, timeouts, failed patches, MCP calls and granted approvals from their structure', () => {
    const items = [
      {
        type: 'local_shell_call',
        id: 'lsh_1',
        call_id: 'c1',
        status: 'completed',
        action: { type: 'exec', command: ['make'], env: {} },
      },
      { type: 'local_shell_call_output', id: 'c1', output: '{"exit_code":2,"stdout":"","stderr":"boom"}' },
      { type: 'shell_call', call_id: 'c2', action: { commands: ['ls', 'sleep 999'] } },
      {
        type: 'shell_call_output',
        call_id: 'c2',
        output: [
          { stdout: 'a.ts', stderr: '', outcome: { type: 'exit', exit_code: 0 } },
          { stdout: '', stderr: '', outcome: { type: 'timeout' } },
        ],
      },
      {
        type: 'apply_patch_call',
        call_id: 'c3',
        status: 'completed',
        operation: { type: 'delete_file', path: 'old.ts' },
      },
      { type: 'apply_patch_call_output', call_id: 'c3', status: 'failed', output: 'old.ts: no such file' },
      {
        type: 'apply_patch_call',
        call_id: 'c4',
        status: 'completed',
        operation: { type: 'create_file', path: 'n.ts', diff: '@@\n+x\n' },
      },
      { type: 'mcp_approval_request', id: 'r1', server_label: 'db', name: 'drop', arguments: '{}' },
      { type: 'mcp_approval_response', approval_request_id: 'r1', approve: true },
      {
        type: 'mcp_call',
        id: 'm1',
        server_label: 'db',
        name: 'drop',
        arguments: '{}',
        error: 'permission denied',
      },
      {
        type: 'mcp_call',
        id: 'm2',
        server_label: 'db',
        name: 'count',
        arguments: '{}',
        output: '3',
        status: 'completed',
      },
    ];
    const { turns: converted, skipped } = fromOpenAIResponses(items, options);
    expect(skipped).toEqual([]);
    expect(itemsOf(converted).map((i) => [i.itemId, i.kind, i.outcome])).toEqual([
      ['c1', 'subprocess', 'error'],
      ['c2', 'subprocess', 'error'],
      ['c3', 'tool_call', 'error'],
      ['c4', 'tool_call', null],
      ['r1', 'approval_request', 'ok'],
      ['m1', 'tool_call', 'error'],
      ['m2', 'tool_call', 'ok'],
    ]);
    expect(converted[1]!.changes[0]).toMatchObject({ detail: 'exit code 2' });
    expect(converted[3]!.changes[0]).toMatchObject({ detail: 'timeout' });
    // A create diff that is not all added lines does not give the whole file: no digest.
    expect(artifactsOf(converted)).toEqual([
      { path: 'old.ts', action: 'deleted', seq: 5, digest: null },
      { path: 'n.ts', action: 'created', seq: 7, digest: null },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------
// Resume contexts at every boundary

/** A context by hand: the node's message of contextAt(boundary), then the given turns as messages. */
function contextWith(boundary: number, raw: readonly TurnEvent[]): ResumeContext {
  const context = contextAt(turns, boundary);
  const messages = raw.map(({ role, content, original }) =>
    original === null ? { role, content } : { role, content, original },
  );
  return { ...context, messages: [context.messages[0]!, ...messages] };
}

describe('toOpenAIResponses', () => {
  it.each(boundaries)('gives a valid body at boundary %i that keeps every real output', (boundary) => {
    const { context, body, contextHash } = validResumeAt(
      turns,
      boundary,
      toOpenAIResponses,
      checkOpenAIResponses,
    );
    const bytes = canonicalJson(body);
    for (const turn of turns.slice(boundary).filter((t) => t.role === 'tool')) {
      expect(bytes).toContain(JSON.stringify(turn.content).slice(1, -1));
    }
    expect(body.instructions === undefined).toBe(boundary === 0);
    if (boundary > 0) expect(body.instructions).toBe(context.messages[0]!.content);
    expect(contextHash).toBe(
      contextHashOf(canonicalJson({ kind: 'tidemark.resume-context', format: 'openai-responses', body })),
    );
  });

  it('type-checks as the input of a Responses request', () => {
    const { body } = toOpenAIResponses(contextAt(turns, 7));
    const input: ResponseCreateParamsNonStreaming['input'] = body.input;
    const request: ResponseCreateParamsNonStreaming = {
      model: 'gpt-5',
      instructions: body.instructions,
      input,
    };
    expect(request.input).toBe(body.input);
  });

  it('gives the original items back without reasoning items or optional item ids', () => {
    const { body } = toOpenAIResponses(contextAt(turns, 0));
    expect(body.input.some((item) => item.type === 'reasoning')).toBe(false);
    expect(body.input[0]).toEqual({
      type: 'message',
      role: 'developer',
      content: [{ type: 'input_text', text: turns[0]!.content }],
    });
    expect(body.input[2]).toEqual({
      type: 'function_call',
      call_id: 'call_read_1',
      name: 'read_file',
      arguments: '{"path":"src/invoice.ts"}',
    });
    expect(body.input[6]).toEqual({ type: 'message', role: 'assistant', content: turns[7]!.content });
    const withIds = body.input.filter((item) => 'id' in item).map((item) => item.type);
    expect(withIds).toEqual(['mcp_approval_request', 'local_shell_call', 'local_shell_call_output']);
  });

  it('keeps the final unanswered call for the runtime to answer', () => {
    const { body } = toOpenAIResponses(contextAt(turns, 20));
    expect(body.input.at(-1)).toMatchObject({ type: 'function_call', call_id: 'call_read_3' });
    expect(checkOpenAIResponses(body, { allowTrailingCalls: false })).toEqual([
      `input[${body.input.length - 1}] (function_call): No tool output found for function call call_read_3`,
    ]);
  });

  it('quotes an output whose call was summarized away, with its call id', () => {
    const { body } = toOpenAIResponses(contextAt(turns, 4));
    const output = (transcript[5] as { output: string }).output;
    expect(body.input[1]).toEqual({
      type: 'message',
      role: 'user',
      content: [
        {
          type: 'input_text',
          text: `[output of call call_read_1, whose call is not in this context] ${output}`,
        },
      ],
    });
    expect(body.input[0]).toMatchObject({ type: 'function_call', call_id: 'call_grep_1' });
    expect(body.input[2]).toMatchObject({ type: 'function_call_output', call_id: 'call_grep_1' });
  });

  it('quotes the background process output when its call is summarized away', () => {
    const { body } = toOpenAIResponses(contextAt(turns, 20));
    expect(body.input.some((item) => item.type === 'local_shell_call_output')).toBe(false);
    expect(JSON.stringify(body.input)).toContain(
      '[output of call call_watch_1, whose call is not in this context]',
    );
  });

  it('states an approval decision whose request was summarized away', () => {
    const { body } = toOpenAIResponses(contextAt(turns, 11));
    expect(body.input[0]).toEqual({
      type: 'message',
      role: 'user',
      content: [
        {
          type: 'input_text',
          text: '[approval decision] request mcpr_01 was denied: Nothing goes to the remote until the fix is reviewed.',
        },
      ],
    });
  });

  it('restates a call whose output is not in the context, unless it is at the very end', () => {
    // Turns 21..27 without the lint output (turn 22): the lint call is unanswered mid-context.
    const raw = turns.slice(20).filter((t) => t.seq !== 22);
    const { body } = toOpenAIResponses(contextWith(20, raw));
    expect(body.input[0]).toEqual({
      type: 'message',
      role: 'assistant',
      content: '[called run_lint({"paths":["src/invoice.ts","src/money.ts"]}) — no result in this context]',
    });
    expect(checkOpenAIResponses(body)).toEqual([]);
  });

  it('writes turns without a Responses original as messages of their role', () => {
    const plain = (seq: number, role: TurnEvent['role'], content: string): TurnEvent => ({
      ...turns[0]!,
      seq,
      turnId: `t${seq}`,
      role,
      content,
      changes: [],
      original: null,
    });
    const context = contextWith(3, [
      plain(4, 'assistant', 'Running the tests.'),
      plain(5, 'tool', '4 passed'),
      plain(6, 'system', 'Budget: 10 more calls.'),
      plain(7, 'assistant', ''),
    ]);
    expect(toOpenAIResponses(context).body.input).toEqual([
      { type: 'message', role: 'assistant', content: 'Running the tests.' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: '[tool output] 4 passed' }] },
      {
        type: 'message',
        role: 'developer',
        content: [{ type: 'input_text', text: 'Budget: 10 more calls.' }],
      },
    ]);
  });

  it('gives the same bytes for the same context', () => {
    const context = contextAt(turns, 13);
    expect(JSON.stringify(toOpenAIResponses(context))).toBe(JSON.stringify(toOpenAIResponses(context)));
  });
});

describe('checkOpenAIResponses', () => {
  const call: ResponseInputItem = {
    type: 'function_call',
    call_id: 'call_1',
    name: 'read_file',
    arguments: '{}',
  };
  const output: ResponseInputItem = { type: 'function_call_output', call_id: 'call_1', output: 'file' };
  const user: ResponseInputItem = { type: 'message', role: 'user', content: 'go on' };

  it('accepts a call answered later, a string input and a pending call at the end', () => {
    expect(checkOpenAIResponses({ input: [user, call, user, output] })).toEqual([]);
    expect(checkOpenAIResponses({ instructions: 'be brief', input: 'hello' })).toEqual([]);
    expect(checkOpenAIResponses({ input: [user, call] })).toEqual([]);
  });

  it('rejects an output whose call is not before it', () => {
    expect(checkOpenAIResponses({ input: [user, output] })).toEqual([
      'input[1] (function_call_output): No tool call found for function call output with call_id call_1',
    ]);
    expect(checkOpenAIResponses({ input: [output, call] })).toContain(
      'input[0] (function_call_output): No tool call found for function call output with call_id call_1',
    );
  });

  it('rejects an output of another kind than its call', () => {
    const custom = { type: 'custom_tool_call', call_id: 'call_1', name: 'sql', input: 'SELECT 1' };
    expect(checkOpenAIResponses({ input: [custom, output] })).toEqual([
      'input[0] (custom_tool_call): No tool output found for function call call_1',
      'input[1] (function_call_output): No tool call found for function call output with call_id call_1',
    ]);
  });

  it('rejects an unanswered call in the middle, and at the end when the runtime will not answer it', () => {
    expect(checkOpenAIResponses({ input: [user, call, user] })).toEqual([
      'input[1] (function_call): No tool output found for function call call_1',
    ]);
    expect(checkOpenAIResponses({ input: [user, call] }, { allowTrailingCalls: false })).toEqual([
      'input[1] (function_call): No tool output found for function call call_1',
    ]);
  });

  it('rejects an approval response without its request', () => {
    const response = { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: false };
    expect(checkOpenAIResponses({ input: [user, response] })).toEqual([
      'input[1] (mcp_approval_response): no mcp_approval_request with id mcpr_1 before it',
    ]);
  });

  it('rejects a reasoning item without a following item, duplicate ids and misplaced parts', () => {
    const reasoning = { type: 'reasoning', id: 'rs_1', summary: [] };
    expect(checkOpenAIResponses({ input: [user, reasoning] })).toEqual([
      "input[1]: Item rs_1 of type 'reasoning' was provided without its required following item",
    ]);
    const message = { type: 'message', id: 'msg_1', role: 'user', content: 'hi' };
    expect(checkOpenAIResponses({ input: [message, message] })).toEqual([
      'input[1]: Duplicate item found with id msg_1 (also input[0])',
    ]);
    const assistant = { role: 'assistant', content: [{ type: 'input_text', text: 'done' }] };
    expect(checkOpenAIResponses({ input: [assistant] })).toEqual([
      'input[0].content[0] of a assistant message has type "input_text"; supported: output_text, refusal',
    ]);
  });

  it('rejects what is not an input at all', () => {
    expect(checkOpenAIResponses(null)).toEqual(['the body is not an object']);
    expect(checkOpenAIResponses({ input: 3, instructions: 4 })).toEqual([
      'instructions is not a string',
      'input is neither a string nor a list of items',
    ]);
    expect(
      checkOpenAIResponses({
        input: [{ type: 'telepathy' }, { role: 'tool', content: 'x' }, { type: 'function_call', name: 'f' }],
      }),
    ).toEqual([
      'input[0] has type "telepathy", which is not an input item type',
      'input[1] (message) has role "tool"; one of user, assistant, system, developer',
      'input[2] (function_call) is missing call_id',
      'input[2] (function_call) is missing arguments',
    ]);
  });
});
