import { appendFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { convertTranscript, outputFormats, problemsIn, type InputFormat } from '@tidemark/adapters';
import { ingest } from '@tidemark/cli';
import { inFormat, type ProviderResume } from '@tidemark/resume';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2ePipeline } from './pipeline.js';
import { sleep } from './reference-check.js';

// Agent runtimes in, model APIs out, through the real pipeline: each transcript fixture (one per input
// format) is ingested with `tidemark ingest`, compacted and decided, and its resume is given back in
// every provider format, each checked by that format's validity checker. Ingesting again publishes
// nothing; a growing Claude Code file is followed; a broken line is named and loses nothing.

const fixtures = fileURLToPath(new URL('../fixtures/transcripts/', import.meta.url));
const inputs: readonly { format: InputFormat; file: string }[] = [
  { format: 'openai-chat', file: 'openai-chat.json' },
  { format: 'openai-responses', file: 'openai-responses.json' },
  { format: 'anthropic', file: 'anthropic.json' },
  { format: 'claude-code', file: 'claude-code.jsonl' },
];
const tenantId = 'adapters';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
beforeAll(async () => {
  // Short spans, so every fixture gets L1s and a digest, and boundaries fall between calls and results.
  e2e = await e2ePipeline([], { L1_EVERY_TURNS: '5', DIGEST_FAN_IN: '2' });
});
afterAll(async () => {
  await e2e.stop();
});

const quiet = () => undefined;

/** Resumes the session until its context reaches the last turn and its plan starts from a node. */
async function settledResume(sessionId: string, turns: number) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const outcome = await e2e.pipeline.resume.client.resume(tenantId, sessionId);
    if (outcome.ok && outcome.result.rawToSeq === turns && outcome.result.nodeId !== null)
      return outcome.result;
    if (Date.now() > deadline) throw new Error(`${sessionId} did not settle: ${JSON.stringify(outcome)}`);
    await sleep(250);
  }
}

describe('tidemark ingest, and resumes every provider accepts', () => {
  for (const { format, file } of inputs) {
    it(`ingests ${file}; its resume in every output format passes that format's checker; again publishes nothing`, async () => {
      const path = join(fixtures, file);
      const sessionId = `fixture-${format}`;
      const expected = convertTranscript(format, await readFile(path, 'utf8'), { tenantId, sessionId });
      const first = await ingest({ env: e2e.env, file: path, format, tenantId, sessionId, say: quiet });
      expect(first).toMatchObject({ turns: expected.turns.length, published: expected.turns.length });

      const result = await settledResume(sessionId, expected.turns.length);
      for (const output of outputFormats) {
        const resumed = inFormat(result, output) as ProviderResume;
        expect({ format: output, problems: problemsIn(output, resumed.body) }).toEqual({
          format: output,
          problems: [],
        });
        // Same marker and format, same bytes.
        expect((inFormat(result, output) as ProviderResume).contextHash).toBe(resumed.contextHash);
      }

      const again = await ingest({ env: e2e.env, file: path, format, tenantId, sessionId, say: quiet });
      expect(again).toMatchObject({ published: 0, already: expected.turns.length });
    });
  }

  it('follows a growing Claude Code file, and names a broken line without losing what is around it', async () => {
    const lines = (await readFile(join(fixtures, 'claude-code.jsonl'), 'utf8')).trimEnd().split('\n');
    const dir = await mkdtemp(join(tmpdir(), 'tidemark-ingest-'));
    const path = join(dir, 'session.jsonl');
    const sessionId = 'followed';
    const half = Math.floor(lines.length / 2);
    await writeFile(path, `${lines.slice(0, half).join('\n')}\n`);
    let stop!: () => void;
    const until = new Promise<void>((resolve) => (stop = resolve));
    const said: string[] = [];
    const following = ingest({
      env: e2e.env,
      file: path,
      format: 'claude-code',
      tenantId,
      sessionId,
      follow: true,
      intervalMs: 100,
      until,
      say: (line) => said.push(line),
    });
    // A line being written (no newline yet) waits; a broken line is named, and nothing after it is read.
    await appendFile(path, lines[half]!.slice(0, 20));
    await sleep(400);
    await appendFile(path, `${lines[half]!.slice(20)}\n{not json\n`);
    const brokenAt = half + 2;
    const deadline = Date.now() + 20_000;
    while (!said.some((line) => line.includes(`${path}:${brokenAt}: line ${brokenAt}: not valid JSON`))) {
      if (Date.now() > deadline) throw new Error(`no error line; said: ${said.join(' | ')}`);
      await sleep(100);
    }
    // The line is fixed (replaced by the rest of the session): everything is published.
    await writeFile(path, `${lines.join('\n')}\n`);
    const all = convertTranscript('claude-code', `${lines.join('\n')}\n`, { tenantId, sessionId }).turns
      .length;
    while (!said.some((line) => line.includes(`of ${all}`))) {
      if (Date.now() > deadline + 20_000) throw new Error(`not all published; said: ${said.join(' | ')}`);
      await sleep(100);
    }
    stop();
    const result = await following;
    expect(result).toMatchObject({ turns: all, published: all });
    await settledResume(sessionId, all);
  });
});
