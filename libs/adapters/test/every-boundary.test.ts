import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ResumeMessage, TurnEvent } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { contextIn, convertTranscript, problemsIn } from '../src/formats.js';
import { inputFormats, outputFormats, type InputFormat } from '../src/types.js';

// Every fixture, in every output format, at every boundary: a resume is valid for the provider whatever
// the boundary splits and whichever format the turns came from (a turn whose original is in another
// format comes back as a text message of its role).

const fixtures = fileURLToPath(new URL('../../../test/fixtures/transcripts/', import.meta.url));
const fileOf: Readonly<Record<InputFormat, string>> = {
  'openai-chat': 'openai-chat.json',
  'openai-responses': 'openai-responses.json',
  anthropic: 'anthropic.json',
  'claude-code': 'claude-code.jsonl',
};

const message = (turn: TurnEvent): ResumeMessage =>
  turn.original === null
    ? { role: turn.role, content: turn.content }
    : { role: turn.role, content: turn.content, original: turn.original };

/** The context a resume gives at boundary b: a node's summary over 1..b (none at 0), then the raw turns. */
function contextAt(turns: readonly TurnEvent[], b: number): { messages: ResumeMessage[] } {
  const node: ResumeMessage[] =
    b === 0 ? [] : [{ role: 'system', content: `Tidemark resume context: a summary of turns 1–${b}.` }];
  return { messages: [...node, ...turns.filter((t) => t.seq > b).map(message)] };
}

describe('every fixture, every output format, every boundary', () => {
  for (const input of inputFormats) {
    const text = readFileSync(`${fixtures}${fileOf[input]}`, 'utf8');
    const { turns } = convertTranscript(input, text, { tenantId: 't', sessionId: input });
    for (const output of outputFormats) {
      it(`${input} fixture → ${output}: valid at each of ${turns.length + 1} boundaries, same bytes twice`, () => {
        expect(turns.length).toBeGreaterThan(10);
        for (let b = 0; b <= turns.length; b++) {
          const { body, contextHash } = contextIn(output, contextAt(turns, b));
          expect({ boundary: b, problems: problemsIn(output, body) }).toEqual({ boundary: b, problems: [] });
          expect(contextIn(output, contextAt(turns, b)).contextHash, `boundary ${b}`).toBe(contextHash);
        }
      });
    }
  }
});
