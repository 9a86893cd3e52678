import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { dropDeployment } from '../src/index.js';
import { unreachableParts } from '../src/preflight.js';
import { closedPort, expectOneClearLine, tidemark, unreachableBound } from './run-cli.js';

// The preflight against the real stack: a stack that answers passes it and the command runs as it
// always did; with one part down and the others real, the command says which, within seconds (before
// the preflight, a Kafka that was down took kafkajs ~30 s of retries, and a Redis that was down printed
// ioredis stack traces and "Reached the max retries per request limit").

const timeout = unreachableBound + 5_000;

function stack() {
  const { kafkaBrokers, schemaRegistryUrl, redisUrl } = inject('endpoints');
  return {
    KAFKA_BROKERS: kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: schemaRegistryUrl,
    REDIS_URL: redisUrl,
  };
}

describe('the preflight on the real stack', () => {
  it('finds every part reachable', async () => {
    const { kafkaBrokers, schemaRegistryUrl, redisUrl } = inject('endpoints');
    expect(
      await unreachableParts({
        KAFKA_BROKERS: kafkaBrokers,
        SCHEMA_REGISTRY_URL: schemaRegistryUrl,
        REDIS_URL: redisUrl,
      }),
    ).toEqual([]);
  });

  it('lets a command through to the stack, which answers as before', async () => {
    const run = randomUUID().slice(0, 8);
    const env = { ...stack(), TOPIC_PREFIX: `cli-${run}.`, REDIS_PREFIX: `cli-${run}:` };
    onTestFinished(() => dropDeployment(env));
    const result = await tidemark(['resume', 'acme/no-such-session'], env, 60_000);
    // Not resumable (nothing was ever published on these topics): the resume client's answer, exit 2 or 3.
    expect(result.stderr).toMatch(/^cannot resume acme\/no-such-session: /);
    expect(result.stderr).not.toContain('cannot reach');
    expect([2, 3]).toContain(result.code);
    expect(result.stdout).toBe('');
  }, 60_000);

  it('ingests a transcript file with one line of account, and names the line of a broken JSONL file', async () => {
    const run = randomUUID().slice(0, 8);
    const env = { ...stack(), TOPIC_PREFIX: `cli-${run}.`, REDIS_PREFIX: `cli-${run}:` };
    onTestFinished(() => dropDeployment(env));
    const fixture = fileURLToPath(
      new URL('../../../test/fixtures/transcripts/anthropic.json', import.meta.url),
    );
    const ok = await tidemark(
      ['ingest', fixture, '--format', 'anthropic', '--session', 'acme/cli-ingest'],
      env,
      60_000,
    );
    expect(ok.code).toBe(0);
    expect(ok.stderr).toMatch(/anthropic\.json: 25 turns, 25 published, 0 already applied/);

    const dir = await mkdtemp(join(tmpdir(), 'tidemark-cli-'));
    const broken = join(dir, 'session.jsonl');
    await writeFile(broken, '{"type":"summary","summary":"x","leafUuid":"u"}\n{oops\n');
    const bad = await tidemark(
      ['ingest', broken, '--format', 'claude-code', '--session', 'acme/cli-broken'],
      env,
      60_000,
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`${broken}:2: line 2: not valid JSON`);

    // Machine-readable: the session as JSON, with why it cannot resume yet (nothing ran the pipeline).
    const inspected = await tidemark(['inspect', 'acme/cli-ingest', '--json'], env, 60_000);
    const json = JSON.parse(inspected.stdout) as {
      sessionId: string;
      compactions: unknown[];
      resume: { code?: string };
    };
    expect(json).toMatchObject({ tenantId: 'acme', sessionId: 'cli-ingest', compactions: [], decisions: [] });
    expect(typeof json.resume.code).toBe('string');
  }, 60_000);

  it(
    'names Kafka and KAFKA_BROKERS alone, within seconds, when only Kafka is down',
    async () => {
      const kafka = await closedPort();
      const run = await tidemark(['resume', 'acme/x'], { ...stack(), KAFKA_BROKERS: `127.0.0.1:${kafka}` });
      expectOneClearLine(
        run,
        [`Kafka at 127.0.0.1:${kafka} (KAFKA_BROKERS)`],
        ['REDIS_URL', 'SCHEMA_REGISTRY_URL'],
      );
    },
    timeout,
  );

  it(
    'names Redis and REDIS_URL alone, within seconds, when only Redis is down',
    async () => {
      const redis = await closedPort();
      const run = await tidemark(['inspect', 'acme/x'], {
        ...stack(),
        REDIS_URL: `redis://127.0.0.1:${redis}`,
      });
      expectOneClearLine(
        run,
        [`Redis at redis://127.0.0.1:${redis} (REDIS_URL)`],
        ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'max retries'],
      );
    },
    timeout,
  );
});
