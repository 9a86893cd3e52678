import type { ResumeContext } from '@tidemark/core';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { checkOpenAIChat } from '../src/check-openai-chat.js';
import { fromOpenAIChat } from '../src/openai-chat.js';
import { toOpenAIChat } from '../src/openai-chat-resume.js';
import { artifactsOf, contextAt, convertedFixture, itemsOf, validResumeAt } from './fixtures.js';

const { transcript, expected, options, turns, boundaries } = convertedFixture<
  { readonly messages: readonly unknown[] },
  { readonly skipped: number }
>('openai-chat.json', { tenantId: 'tenant-chat', sessionId: 'session-chat' }, (fixture, session) =>
  fromOpenAIChat(fixture.messages, session),
);

describe('fromOpenAIChat', () => {
  it('converts the fixture to exactly the hand-checked items and artifacts', () => {
    const conversion = fromOpenAIChat(transcript.messages, options);
    expect(conversion.turns).toHaveLength(expected.turns);
    expect(conversion.skipped).toHaveLength(expected.skipped);
    expect(itemsOf(conversion.turns)).toEqual(expected.items);
    expect(artifactsOf(conversion.turns)).toEqual(expected.artifacts);
  });

  it('gives one turn per message, developer as system, and says in the text what was called', () => {
    expect(turns.map((t) => t.seq)).toEqual(transcript.messages.map((_, index) => index + 1));
    expect(turns[0]).toMatchObject({
      role: 'system',
      content: expect.stringContaining('coding agent') as string,
    });
    expect(turns[2]!.content).toContain('read_file({"path":"src/export/csv.ts"})');
    expect(turns[2]!.content).toContain('run_command({"cmd":"npm test -- test/export.test.ts"})');
    expect(turns[9]).toMatchObject({ role: 'tool', content: expect.stringContaining('ENOENT') as string });
    expect(turns[14]!.content).toContain('open a draft PR');
    expect(turns.every((t) => t.original?.format === 'openai-chat')).toBe(true);
  });

  it('closes a call whose output reports an error with outcome ok, as Chat has no error flag', () => {
    expect(turns[9]!.changes).toEqual([
      { type: 'item_closed', itemId: 'call_Rt2mW8yK5dGa3XpB', outcome: 'ok', detail: null },
    ]);
  });

  it('gives identical turns for the same transcript', () => {
    const again = fromOpenAIChat(transcript.messages, options);
    expect(again.turns).toEqual(turns);
    expect(JSON.stringify(again.turns)).toBe(JSON.stringify(turns));
  });

  it('skips and lists what it does not understand, and converts the rest', () => {
    const messages = [
      transcript.messages[0],
      42,
      { role: 'critic', content: 'looks fine' },
      { role: 'tool', content: 'an output with no tool_call_id' },
      { role: 'function', name: 'lookup', content: 'legacy output' },
      { role: 'user', content: { text: 'not a string or a list' } },
      {
        role: 'assistant',
        content: 'Trying two calls.',
        tool_calls: [
          { id: 'call_bad', type: 'function' },
          { id: 'call_ok', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_ok', content: 'file a' },
      { role: 'tool', tool_call_id: 'call_nobody', content: 'an output for no call' },
    ];
    const { turns: converted, skipped } = fromOpenAIChat(messages, options);
    expect(skipped.map((s) => s.at)).toEqual([2, 3, 4, 5, 6, 7, 9]);
    expect(skipped[1]!.reason).toContain('unknown role "critic"');
    expect(converted.map((t) => t.role)).toEqual(['system', 'assistant', 'tool', 'tool']);
    expect(itemsOf(converted)).toEqual([
      {
        itemId: 'call_ok',
        kind: 'tool_call',
        name: 'read_file',
        openedAtSeq: 2,
        closedAtSeq: 3,
        outcome: 'ok',
      },
    ]);
    expect(converted[3]).toMatchObject({ content: 'an output for no call', changes: [] });
  });

  it('reads apply_patch as a custom tool, as Responses-style operations, and refuses a broken patch', () => {
    const call = (id: string, name: string, args: unknown) =>
      name === 'custom'
        ? { id, type: 'custom', custom: { name: 'apply_patch', input: args as string } }
        : { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
    const messages = [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          call(
            'c1',
            'custom',
            '*** Begin Patch\n*** Delete File: old.txt\n*** Update File: a.ts\n*** Move to: b.ts\n@@\n-x\n+y\n*** End Patch',
          ),
          call('c2', 'apply_patch', { operation: { type: 'create_file', path: 'n.md', diff: '+# N\n+\n' } }),
          call('c3', 'apply_patch', { type: 'delete_file', path: 'gone.md' }),
          call('c4', 'apply_patch', {
            input: '*** Begin Patch\n*** Add File: x.ts\nnot a plus line\n*** End Patch',
          }),
        ],
      },
    ];
    const { turns: converted, skipped } = fromOpenAIChat(messages, options);
    expect(artifactsOf(converted)).toEqual([
      { path: 'old.txt', action: 'deleted', seq: 1, digest: null },
      { path: 'a.ts', action: 'deleted', seq: 1, digest: null },
      { path: 'b.ts', action: 'modified', seq: 1, digest: null },
      // The diff's lines without their '+', joined by newlines: "# N\n" (sha256 by `printf '# N\n' | sha256sum`).
      {
        path: 'n.md',
        action: 'created',
        seq: 1,
        digest: 'sha256:3984a2abf29082f3fce337dd871778a25d2f33854d594c4488bedfdacde3b742',
      },
      { path: 'gone.md', action: 'deleted', seq: 1, digest: null },
    ]);
    expect(skipped).toEqual([{ at: 1, reason: expect.stringContaining('apply_patch call c4') as string }]);
    expect(itemsOf(converted).map((i) => i.itemId)).toEqual(['c1', 'c2', 'c3', 'c4']);
  });
});

// ---------------------------------------------------------------------------------------------------
// Resume contexts at every boundary

function textOf(message: ChatCompletionMessageParam): string {
  const content = message.content;
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part) => ('text' in part ? part.text : 'refusal' in part ? part.refusal : ''))
    .join('\n');
}

/** Tool messages whose call is not in the assistant message right before their run of tool messages. */
function toolMessagesWithoutCall(messages: readonly ChatCompletionMessageParam[]): string[] {
  return messages.flatMap((message, index) => {
    if (message.role !== 'tool') return [];
    const owner = messages.slice(0, index).findLast((m) => m.role !== 'tool');
    const calls = owner?.role === 'assistant' ? (owner.tool_calls ?? []) : [];
    return calls.some((call) => call.id === message.tool_call_id) ? [] : [message.tool_call_id];
  });
}

describe('toOpenAIChat', () => {
  it.each(boundaries)('gives a valid body for a resume after turn %i', (boundary) => {
    const { context, body } = validResumeAt(turns, boundary, toOpenAIChat, checkOpenAIChat);
    expect(toolMessagesWithoutCall(body.messages)).toEqual([]);
    const texts = body.messages.map(textOf);
    for (const turn of turns.slice(boundary).filter((t) => t.role === 'tool')) {
      expect(texts.some((text) => text.includes(turn.content))).toBe(true);
    }
    if (boundary > 0) {
      expect(body.messages[0]).toMatchObject({ role: 'system', content: context.messages[0]!.content });
    }
  });

  it('tells the output of a call summarized before the boundary as user text quoting the call id', () => {
    const { body } = toOpenAIChat(contextAt(turns, 3));
    expect(body.messages[1]).toEqual({
      role: 'user',
      content: expect.stringMatching(
        /^\[tool output for call call_7fKq2LmN9xRb4TzW \(its call is not in this context\)\]\nimport type \{ Invoice \}/,
      ) as string,
    });
  });

  it('restates a call that got no result in its message and removes it from tool_calls', () => {
    const { body } = toOpenAIChat(contextAt(turns, 15));
    const assistant = body.messages[1] as Extract<ChatCompletionMessageParam, { role: 'assistant' }>;
    expect(assistant.tool_calls?.map((call) => call.id)).toEqual(['call_Ka8dT3nY6pRb5HsL']);
    expect(assistant.content).toBe(
      'Running the linter and opening the draft PR.\n[called create_pull_request({"base": "main", "draft": true, "title": "Export: add currency column"}) — no result in this context]',
    );
  });

  it('leaves the calls of the last message, with nothing after it, for the runtime to answer', () => {
    const { body } = toOpenAIChat(contextAt(turns, 20));
    expect(body.messages.at(-1)).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_Yd0tK6wB3nHs8PqC' }],
    });
  });

  it('gives an assistant message left without calls or content the restatement as its content', () => {
    const context = contextAt(turns, 20);
    const trimmed: ResumeContext = {
      ...context,
      messages: [...context.messages.slice(0, 2), { role: 'user', content: 'Stop here.' }],
    };
    const { body } = toOpenAIChat(trimmed);
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: expect.stringMatching(/^\[called apply_patch\(.*\) — no result in this context\]$/s) as string,
    });
    expect(checkOpenAIChat(body)).toEqual([]);
  });

  it('writes a turn from another format, or with no original, as plain text of its role', () => {
    const context = contextAt(turns, 0);
    const plain: ResumeContext = {
      ...context,
      messages: [
        { role: 'user', content: 'hello', original: { format: 'anthropic', json: '{"role":"user"}' } },
        { role: 'assistant', content: 'calling' },
        { role: 'tool', content: 'output' },
      ],
    };
    expect(toOpenAIChat(plain).body.messages).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'calling' },
      { role: 'user', content: '[tool output] output' },
    ]);
  });

  it('types as the official openai request messages', () => {
    const { body } = toOpenAIChat(contextAt(turns, 7));
    // Checked by tsc: the body's messages are what the official SDK sends.
    const messages: ChatCompletionCreateParamsNonStreaming['messages'] = body.messages;
    // @ts-expect-error a tool message without tool_call_id is not a ChatCompletionMessageParam
    const invalid: ChatCompletionMessageParam = { role: 'tool', content: 'output' };
    expect(messages).toBe(body.messages);
    expect(checkOpenAIChat({ messages: [invalid] })).not.toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------
// The checker, seen failing

describe('checkOpenAIChat', () => {
  const user = { role: 'user', content: 'go' };
  const assistantCalling = (...ids: string[]) => ({
    role: 'assistant',
    content: null,
    tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'run', arguments: '{}' } })),
  });
  const result = (id: string) => ({ role: 'tool', tool_call_id: id, content: `output of ${id}` });

  it('accepts a valid conversation, and a final assistant message still awaiting its results', () => {
    expect(
      checkOpenAIChat({ messages: [user, assistantCalling('a', 'b'), result('b'), result('a')] }),
    ).toEqual([]);
    expect(checkOpenAIChat({ messages: [user, assistantCalling('a')] })).toEqual([]);
  });

  it('rejects a tool message that follows no assistant message with tool_calls', () => {
    expect(checkOpenAIChat({ messages: [user, result('a')] })).toEqual([
      'messages[1]: tool message for a does not follow an assistant message with tool_calls',
    ]);
  });

  it('rejects a call left unanswered before the next non-tool message', () => {
    expect(checkOpenAIChat({ messages: [user, assistantCalling('a', 'b'), result('a'), user] })).toEqual([
      'messages[1]: tool calls b are not answered by tool messages before messages[3]',
    ]);
    expect(checkOpenAIChat({ messages: [user, assistantCalling('a', 'b'), result('a')] })).toEqual([
      'messages[1]: tool calls b are not answered by tool messages before the end of the messages',
    ]);
  });

  it('rejects a tool message answering a call of another message, and a second answer', () => {
    expect(
      checkOpenAIChat({
        messages: [user, assistantCalling('a'), result('a'), assistantCalling('b'), result('a'), result('b')],
      }),
    ).toEqual([
      'messages[4]: tool message for a answers no call of messages[3]',
      'messages[4]: a is already answered by messages[2]',
    ]);
  });

  it('rejects unknown roles and bad content shapes', () => {
    expect(
      checkOpenAIChat({
        messages: [
          { role: 'critic', content: 'x' },
          { role: 'assistant', content: null },
          { role: 'user', content: [{ type: 'refusal', refusal: 'no' }] },
          { role: 'tool', content: 'x' },
          { role: 'system', content: [] },
        ],
      }),
    ).toEqual([
      'messages[0]: role "critic" is not one of developer, system, user, assistant, tool, function',
      'messages[1]: an assistant message needs content unless it has tool_calls',
      'messages[2]: content[0]: part type "refusal" is not allowed here (allowed: text, image_url, input_audio, file)',
      'messages[3]: a tool message needs tool_call_id',
      'messages[4]: content must not be an empty list',
    ]);
    expect(checkOpenAIChat({ messages: [] })).toEqual(['body.messages must hold at least one message']);
    expect(checkOpenAIChat({})).toEqual(['body.messages must be a list of messages']);
  });
});
