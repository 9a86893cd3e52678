import type { MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages';
import { foldTurns } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { fromAnthropic } from '../src/anthropic.js';
import { toAnthropic, type AnthropicBody } from '../src/anthropic-resume.js';
import { checkAnthropic } from '../src/check-anthropic.js';
import { artifactsOf, contextAt, convertedFixture, itemsOf, validResumeAt } from './fixtures.js';

const { transcript, expected, options, turns, skipped, boundaries } = convertedFixture<
  {
    readonly system: string;
    readonly messages: readonly { readonly role: string; readonly content: unknown }[];
  },
  { readonly roles: readonly string[] }
>('anthropic.json', { tenantId: 'tenant-a', sessionId: 'session-a' }, fromAnthropic);

/** Every string a model would read in the body: text blocks and tool results' text. */
function textsOf(body: AnthropicBody): string[] {
  const texts = body.system === undefined ? [] : [body.system];
  for (const message of body.messages) {
    if (typeof message.content === 'string') texts.push(message.content);
    else
      for (const block of message.content) {
        if (block.type === 'text') texts.push(block.text);
        if (block.type === 'tool_result') texts.push(...resultTexts(block.content));
      }
  }
  return texts;
}

function resultTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return (content as { type: string; text?: string }[]).flatMap((p) => (p.type === 'text' ? [p.text!] : []));
}

/** The text of every tool result in the fixture messages converted to turns after `boundary`. */
function resultTextsAfter(boundary: number): string[] {
  // Seq 1 is the system prompt: message k (0-based) is seq k + 2.
  return transcript.messages.flatMap((message, index) => {
    if (index + 2 <= boundary || typeof message.content === 'string') return [];
    return (message.content as { type: string; content?: unknown }[]).flatMap((block) =>
      block.type === 'tool_result' ? resultTexts(block.content) : [],
    );
  });
}

describe('fromAnthropic', () => {
  it('converts the fixture to exactly the hand-checked items and artifacts', () => {
    expect(skipped).toEqual([]);
    expect(turns).toHaveLength(expected.turns);
    expect(turns.map((t) => t.role)).toEqual(expected.roles);
    expect(itemsOf(turns)).toEqual(expected.items);
    expect(artifactsOf(turns)).toEqual(expected.artifacts);
  });

  it('gives changes the fold accepts, with seqs 1, 2, 3 … and the original message kept', () => {
    const { results } = foldTurns(options.tenantId, options.sessionId, turns);
    expect(results.every((r) => r.ok && !r.duplicate && r.rejected.length === 0)).toBe(true);
    expect(turns.map((t) => t.seq)).toEqual(turns.map((_, i) => i + 1));
    expect(turns.every((t) => t.original?.format === 'anthropic')).toBe(true);
  });

  it('renders text, calls as name(input) and results as their text', () => {
    expect(turns[0]!.content).toBe(transcript.system);
    expect(turns[2]!.content).toContain('bash({"command":"ls src && cat package.json"})');
    expect(turns[3]!.content).toContain('"name": "accounts-api"');
    expect(turns[4]!.content).not.toContain('express-rate-limit is the usual choice'); // thinking stays out
  });

  it('closes a declined call with outcome error: the format has no denial structure', () => {
    const declined = turns[5]!.changes.find((c) => c.type === 'item_closed');
    expect(declined).toEqual({
      type: 'item_closed',
      itemId: 'toolu_01KsU6oX9rAt4TcWdEfG7hIj',
      outcome: 'error',
      detail: 'The user rejected this tool call, so it was not run.',
    });
    expect(turns.flatMap((t) => t.changes).some((c) => c.type === 'item_disposed')).toBe(false);
  });

  it('gives the same turns for the same transcript', () => {
    const again = fromAnthropic(structuredClone(transcript), options);
    expect(again.turns).toEqual(turns);
    expect(JSON.stringify(again.turns)).toBe(JSON.stringify(turns));
  });

  it('skips and counts what it does not understand, and keeps unknown blocks as text', () => {
    const odd = fromAnthropic(
      [
        { role: 'user', content: 'hello' },
        42,
        { role: 'developer', content: 'be brief' },
        { role: 'user' },
        {
          role: 'assistant',
          content: [
            { type: 'mystery_block', payload: 1 },
            { type: 'tool_use', name: 'bash', input: {} },
            { type: 'tool_result', tool_use_id: 'toolu_nowhere', content: 'late' },
            { type: 'text', text: 'done' },
          ],
        },
      ],
      options,
    );
    expect(odd.skipped.map((s) => s.at)).toEqual([2, 3, 4, 5, 5]);
    expect(odd.skipped).toHaveLength(5);
    expect(odd.turns.map((t) => t.role)).toEqual(['user', 'assistant']);
    expect(odd.turns[1]!.content).toContain('[mystery_block]');
    expect(odd.turns[1]!.changes).toEqual([]);
    expect(odd.turns.map((t) => t.seq)).toEqual([1, 2]);
  });
});

describe('toAnthropic', () => {
  it.each(boundaries)('gives a valid body that keeps every real result, resuming after turn %i', (b) => {
    const { body, contextHash } = validResumeAt(turns, b, toAnthropic, checkAnthropic);
    const texts = textsOf(body);
    for (const result of resultTextsAfter(b)) expect(texts.some((t) => t.includes(result))).toBe(true);
    expect(contextHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('moves the node to `system` and keeps the last call for the runtime to answer', () => {
    const { body } = toAnthropic(contextAt(turns, 10));
    expect(body.system).toContain('Tidemark resume context: L1 node');
    expect(body.messages[0]!.role).toBe('user');
    const last = body.messages.at(-1)!;
    expect(last.role).toBe('assistant');
    expect(last.content).toContainEqual(expect.objectContaining({ id: 'toolu_01UcE6yH9bKd4DmGnOpQ7rSt' }));
  });

  it('quotes a result whose call was summarized away, and restates a call whose result was', () => {
    // After turn 3 the calls of seq 3 are in the node; their results (seq 4) are raw.
    const after3 = toAnthropic(contextAt(turns, 3)).body;
    const first = JSON.stringify(after3.messages[0]);
    expect(first).toContain('[result of tool call toolu_01HxQ3kV7mYp2RzUaBcD4eFg');
    expect(first).not.toContain('"type":"tool_result"');
    // Starting at an assistant message: a user note opens the conversation.
    const after2 = toAnthropic(contextAt(turns, 2)).body;
    expect(after2.messages[0]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: '(resumed from a Tidemark context)' }],
    });
  });

  it('restates a call with no result in the next message as text, and merges same-role turns', () => {
    const context = contextAt(turns, 24);
    const unanswered = {
      ...context,
      messages: [
        ...context.messages,
        { role: 'user' as const, content: 'stop, do not commit yet' },
        { role: 'tool' as const, content: 'raw tool output with no original' },
        { role: 'system' as const, content: 'the user is away' },
      ],
    };
    const { body } = toAnthropic(unanswered);
    expect(checkAnthropic(body)).toEqual([]);
    const [, assistant, user] = body.messages;
    expect(JSON.stringify(assistant)).toContain('[called bash({\\"command\\":\\"git add');
    expect(user!.content).toEqual([
      { type: 'text', text: 'stop, do not commit yet' },
      { type: 'text', text: '[tool output] raw tool output with no original' },
      { type: 'text', text: '[system] the user is away' },
    ]);
  });

  it('is typed as the official SDK request body', () => {
    const { body } = toAnthropic(contextAt(turns, 10));
    // Checked by tsc: the body's parts fit MessageCreateParamsNonStreaming as they are.
    const params: MessageCreateParamsNonStreaming = {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages: body.messages,
      ...(body.system === undefined ? {} : { system: body.system }),
    };
    expect(params.messages).toBe(body.messages);
  });
});

describe('checkAnthropic', () => {
  const user = (content: unknown) => ({ role: 'user', content });
  const assistant = (content: unknown) => ({ role: 'assistant', content });
  const call = (id: string) => ({ type: 'tool_use', id, name: 'bash', input: { command: 'ls' } });
  const result = (id: string) => ({ type: 'tool_result', tool_use_id: id, content: 'ok' });

  it('accepts a well-formed exchange, with the final call left for the runtime', () => {
    const body = {
      messages: [user('go'), assistant([call('a')]), user([result('a')]), assistant([call('b')])],
    };
    expect(checkAnthropic(body)).toEqual([]);
  });

  it('rejects a tool_result whose call is not in the previous message', () => {
    expect(checkAnthropic({ messages: [user([result('x')])] })).toEqual([
      'messages[0]: tool_result for x, which is not a tool_use of the previous message',
    ]);
  });

  it('rejects a tool_use left unanswered in the middle', () => {
    const body = { messages: [user('go'), assistant([call('a')]), user('and?'), assistant('done')] };
    expect(checkAnthropic(body)).toEqual(['messages[1]: tool_use a has no tool_result in the next message']);
  });

  it('rejects two user messages in a row', () => {
    expect(checkAnthropic({ messages: [user('one'), user('two')] })).toEqual([
      'messages[1]: a second user message in a row (roles must alternate)',
    ]);
  });

  it('rejects an assistant message first', () => {
    expect(checkAnthropic({ messages: [assistant('hello'), user('hi')] })).toEqual([
      'messages[0]: the first message must be a user message',
    ]);
  });

  it('rejects results after text, empty content, blank text, duplicate ids and no messages', () => {
    expect(
      checkAnthropic({
        messages: [
          user('go'),
          assistant([call('a'), call('a')]),
          user([{ type: 'text', text: 'here:' }, result('a')]),
          assistant([]),
          user([{ type: 'text', text: '  ' }]),
        ],
      }),
    ).toEqual([
      'messages[3]: content is empty',
      'messages[4].content[0]: text must not be empty or only whitespace',
      'messages[2].content[1]: a tool_result after other content (tool results must come first)',
      'messages[1]: tool_use id a is used twice (ids must be unique)',
    ]);
    expect(checkAnthropic({ messages: [] })).toEqual(['`messages` must be a non-empty list']);
  });
});
