import type { ResumeContext, TurnEvent } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { contextIn, convertTranscript, problemsIn } from '../src/formats.js';
import { outputFormats } from '../src/types.js';
import { boundariesOf, transcriptFixtures, validResumeAt } from './fixtures.js';

// Every transcript fixture, in every provider format, resumed after every turn: a body the provider
// accepts, the same contextHash each time, and no tool result of the raw turns lost. A fixture given
// back in another format than its own is the cross-format case: its turns are plain text of their role.

/**
 * The lines of every tool result among the raw turns, as they stand in a body's JSON. Lines, not whole
 * results: a format that gives a turn back as its original may hold one turn's results in separate
 * blocks (Anthropic's `tool_result`s of one message), whose texts the turn joins with newlines.
 */
function resultLines(raw: readonly TurnEvent[]): { seq: number; line: string }[] {
  return raw
    .filter((turn) => turn.role === 'tool')
    .flatMap((turn) =>
      turn.content
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => ({ seq: turn.seq, line: JSON.stringify(line).slice(1, -1) })),
    );
}

describe.each(transcriptFixtures())('the $file fixture ($format) resumed', ({ file, format, text }) => {
  const { turns } = convertTranscript(format, text, { tenantId: 'tenant-every', sessionId: file });

  it.each(outputFormats)(
    'in %s after every turn: a valid body, a stable contextHash and every tool result kept',
    (output) => {
      expect(turns.length).toBeGreaterThan(10);
      const to = (context: ResumeContext) => contextIn(output, context);
      const problems = (body: unknown) => problemsIn(output, body);
      for (const boundary of boundariesOf(turns)) {
        const at = `${file} in ${output}, resumed after turn ${boundary}`;
        const { body } = validResumeAt(turns, boundary, to, problems, at);
        const json = JSON.stringify(body);
        for (const { seq, line } of resultLines(turns.slice(boundary))) {
          expect(json.includes(line), `${at}: the result of turn ${seq} holds ${line}`).toBe(true);
        }
      }
    },
  );
});
