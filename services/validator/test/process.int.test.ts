import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { definePolicy, generateSession, runReference, isVerdict } from '@tidemark/core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { harness, lines, type Harness } from './harness.js';

// The validator as a process (src/main.ts): health, readiness and metrics over HTTP; SIGKILL in the
// middle of a run and a restart lose nothing and publish nothing with other content; SIGTERM drains
// and exits cleanly. The restart waits for the group to drop the killed member (SESSION_TIMEOUT_MS, set
// to the broker's 6 s floor here).

const root = fileURLToPath(new URL('..', import.meta.url));

interface Running {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
}

async function launch(h: Harness): Promise<Running> {
  const { config } = h;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
      SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
      REDIS_URL: config.REDIS_URL,
      TOPIC_PREFIX: config.TOPIC_PREFIX,
      REDIS_PREFIX: config.REDIS_PREFIX,
      VALIDATOR_GROUP_ID: config.VALIDATOR_GROUP_ID,
      TOPIC_PARTITIONS: String(config.TOPIC_PARTITIONS),
      HTTP_PORT: '0',
      // The broker's floor: the restart waits this long for the group to drop the killed member.
      SESSION_TIMEOUT_MS: '6000',
      WATERMARK_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in: ${output}`)), 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"url":"(http:[^"]+)"/.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  });
  return { child, url, exited };
}

async function until(test: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the validator process', () => {
  it('survives a SIGKILL mid-run: the restarted process completes the reference decisions, nothing with other content', async () => {
    const h = await harness();
    const sessions = [801, 802, 803].map((seed) => {
      const turns = generateSession(seed, { tenantId: 'proc', sessionId: `proc-${seed}`, turns: 400 });
      return { turns, run: runReference(turns, { policy: definePolicy({ summarizer: 'narrative' }) }) };
    });
    for (const { turns } of sessions) await h.apply(turns);
    const compactions = sessions.flatMap((s) => s.run.compactions);
    const reference = sessions.flatMap((s) => s.run.decisions);

    const first = await launch(h);
    await until(async () => (await fetch(`${first.url}/readyz`)).status === 200, 30_000, 'readiness');
    expect(await (await fetch(`${first.url}/healthz`)).json()).toMatchObject({ status: 'ok' });

    // Publish in small chunks and kill the process once it has decided part of them.
    const publishing = (async () => {
      for (let i = 0; i < compactions.length; i += 5) {
        await h.publish(compactions.slice(i, i + 5));
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    })();
    await until(() => h.markers.length >= reference.length / 4, 30_000, 'some decisions');
    first.child.kill('SIGKILL');
    await first.exited;
    await publishing;
    const beforeRestart = h.markers.length;
    expect(beforeRestart).toBeLessThan(reference.length);

    const second = await launch(h);
    await until(() => h.markers.filter(isVerdict).length >= compactions.length, 90_000, 'every verdict');
    await h.settled(60_000);

    // Everything published is a reference decision; deduplicated, it is the reference, per session.
    const referenceLines = new Set(lines(reference));
    expect(lines(h.markers).filter((line) => !referenceLines.has(line))).toEqual([]);
    for (const { turns, run } of sessions) {
      expect([...new Set(lines(h.markersOf(turns[0]!.sessionId)))]).toEqual(lines(run.decisions));
    }

    const metrics = await (await fetch(`${second.url}/metrics`)).text();
    expect(metrics).toContain('tidemark_validator_decisions_total{outcome="invalid",cause="check"}');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
