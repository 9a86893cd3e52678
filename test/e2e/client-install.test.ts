import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { hashToken } from '@tidemark/resume';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2ePipeline } from './pipeline.js';

// @tidemark/client as an agent runtime outside this repository gets it: the packages are built to
// JavaScript with .d.ts and packed (`pnpm pack`), installed with plain npm into a temporary project
// outside the workspace, and a script there publishes a transcript, waits until the pipeline has settled
// and resumes the session in a provider's format, against the real stack.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const fixture = fileURLToPath(new URL('../fixtures/transcripts/openai-chat.json', import.meta.url));
const tenantId = 'runtime';
const token = 'runtime-token';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let workdir: string;
beforeAll(async () => {
  e2e = await e2ePipeline([], {
    L1_EVERY_TURNS: '5',
    DIGEST_FAN_IN: '2',
    RESUME_TOKENS: `${tenantId}:${hashToken(token)}`,
  });
  workdir = await mkdtemp(join(tmpdir(), 'tidemark-client-'));
}, 120_000);
afterAll(async () => {
  await e2e?.stop();
  if (workdir !== undefined) await rm(workdir, { recursive: true, force: true });
});

const script = `
import { readFile } from 'node:fs/promises';
import { connectTidemark } from '@tidemark/client';

const client = await connectTidemark({
  brokers: process.env.KAFKA_BROKERS.split(','),
  registryUrl: process.env.SCHEMA_REGISTRY_URL,
  topicPrefix: process.env.TOPIC_PREFIX,
  resumeUrl: process.env.TIDEMARK_URL,
  token: process.env.TIDEMARK_TOKEN,
  tenantId: 'runtime',
});
const text = await readFile(process.env.TRANSCRIPT, 'utf8');
const first = await client.publishTranscript('chat-1', 'openai-chat', text);
const again = await client.publishTranscript('chat-1', 'openai-chat', text);
const state = await client.waitUntilSettled('chat-1', first.turns, 90_000);
const resume = await client.resume('chat-1', 'openai-chat');
await client.close();
console.log(JSON.stringify({ first, again, state, resume }));
`;

describe('@tidemark/client, installed with npm outside the workspace', () => {
  it('publishes a transcript, waits until settled and resumes it in a provider format', async () => {
    const packs = join(workdir, 'packs');
    await run(process.execPath, ['--import', 'tsx', 'scripts/build-packages.ts', '--pack', packs], {
      cwd: root,
    });
    const tarballs = (await readdir(packs)).filter((file) => file.endsWith('.tgz'));
    expect(tarballs.sort()).toEqual([
      'tidemark-adapters-0.0.0.tgz',
      'tidemark-client-0.0.0.tgz',
      'tidemark-contract-0.0.0.tgz',
      'tidemark-core-0.0.0.tgz',
    ]);
    const project = join(workdir, 'runtime');
    await run('mkdir', ['-p', project]);
    const dependencies = Object.fromEntries(
      tarballs.map((file) => [
        `@tidemark/${file.replace(/^tidemark-|-0\.0\.0\.tgz$/g, '')}`,
        `file:${join(packs, file)}`,
      ]),
    );
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'runtime', private: true, type: 'module', dependencies }, null, 2),
    );
    await writeFile(join(project, 'resume.mjs'), script);
    await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project });

    const { stdout } = await run(process.execPath, ['resume.mjs'], {
      cwd: project,
      env: {
        ...process.env,
        ...e2e.env,
        TIDEMARK_URL: e2e.pipeline.url,
        TIDEMARK_TOKEN: token,
        TRANSCRIPT: fixture,
      },
    });
    const answer = JSON.parse(stdout) as {
      first: { turns: number; published: number };
      again: { turns: number; published: number };
      state: { appliedSeq: number; settled: boolean };
      resume: { format: string; nodeId: string | null; body: { messages: unknown[] } };
    };
    expect(answer.first.published).toBe(answer.first.turns);
    expect(answer.first.turns).toBeGreaterThan(5);
    expect(answer.again.published).toBe(0);
    expect(answer.state).toMatchObject({ appliedSeq: answer.first.turns, settled: true });
    expect(answer.resume.format).toBe('openai-chat');
    expect(answer.resume.nodeId).not.toBeNull();
    expect(answer.resume.body.messages.length).toBeGreaterThan(0);
  }, 300_000);
});
