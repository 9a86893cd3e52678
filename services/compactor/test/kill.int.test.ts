import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  canonicalJson,
  definePolicy,
  generateSession,
  runReference,
  seededRandom,
  type Compaction,
  type TurnEvent,
} from '@tidemark/core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { collectCompactions, distinct, hasIds, stage } from './harness.js';

// The compactor as its own process (`tsx src/main.ts`), SIGKILLed again and again at random points
// while turns arrive, then left to finish: the compactions must be exactly those of a run without
// kills (the reference, which the uninterrupted service equals byte for byte), none missing, none extra,
// and every copy of a duplicate identical.

const here = fileURLToPath(new URL('..', import.meta.url));

function spawnCompactor(env: Record<string, string>): ChildProcess {
  // One process (node with tsx's loader), in its own process group so a kill takes all of it.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: here,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  child.once('exit', (code, signal) => {
    // Anything but our own signals is a crash: show why.
    if (signal !== 'SIGKILL' && signal !== 'SIGTERM' && code !== 0)
      console.error(`compactor exited ${code}: ${errors}`);
  });
  return child;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

/** Waits until the instance answers /readyz with 200 (its consumers joined their groups). */
async function ready(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the compactor did not become ready');
}

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
    } else child.once('exit', (code, signal) => resolve({ code, signal }));
  });

describe('the compactor under SIGKILL', () => {
  it('publishes after 10 kills at random points exactly the compactions of a run without kills', async () => {
    const s = await stage();
    const policy = definePolicy({ l1EveryTurns: 10, digestFanIn: 2 });
    const env = s.env({
      L1_EVERY_TURNS: '10',
      DIGEST_FAN_IN: '2',
      SHUTDOWN_GRACE_MS: '5000',
      CONSUMER_SESSION_TIMEOUT_MS: '6000',
    });
    const sessions = [0, 1, 2, 3].map((i) => generateSession(40 + i, { turns: 120, sessionId: `kill-${i}` }));
    const collected = await collectCompactions(s.bus);
    const random = seededRandom(7);

    // Turns arrive round-robin in chunks over the whole run, so kills land before, during and after
    // batches, compactions and commits.
    const chunks: TurnEvent[][] = [];
    for (let from = 0; from < 120; from += 6)
      chunks.push(sessions.flatMap((turns) => turns.slice(from, from + 6)));
    let publishing = true;
    const publisher = (async () => {
      for (const chunk of chunks) {
        await s.publish(chunk);
        await new Promise((resolve) => setTimeout(resolve, 250 + random() * 250));
      }
      publishing = false;
    })();

    let live: ChildProcess | null = null;
    onTestFinished(() => {
      // The last instance was stopped by the test; one left by a failure is killed with its group.
      if (live?.pid !== undefined && live.exitCode === null && live.signalCode === null) {
        process.kill(-live.pid, 'SIGKILL');
      }
    });
    // Half the kills at any point of a start (before or during the group join), half while running:
    // at a random moment after the instance is ready (joined, consuming what keeps arriving).
    let kills = 0;
    while (kills < 10 || publishing) {
      const port = await freePort();
      live = spawnCompactor({ ...env, HTTP_PORT: String(port) });
      if (kills % 2 === 1) await ready(port, live);
      await new Promise((resolve) => setTimeout(resolve, (kills % 2 === 1 ? 0 : 300) + random() * 1_500));
      process.kill(-live.pid!, 'SIGKILL');
      await exited(live);
      kills += 1;
    }
    await publisher;

    const expected = new Map<string, Compaction>();
    for (const turns of sessions) {
      const seqs = s.offsets.get(`${turns[0]!.tenantId}/${turns[0]!.sessionId}`)!;
      const run = runReference(turns, {
        policy,
        compactorVersion: 'tidemark-compactor/1',
        offsetOf: (seq) => seqs.get(seq)!,
      });
      for (const c of run.compactions) expected.set(c.compactionId, c);
    }
    live = spawnCompactor(env);
    await collected.waitFor(hasIds(expected.keys()), 90_000);
    // A graceful stop: close-with-grace closes the host, then re-raises the signal (or exits 0).
    const stopping = Date.now();
    live.kill('SIGTERM');
    const exit = await exited(live);
    expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
    expect(Date.now() - stopping).toBeLessThan(5_000);

    const published = distinct(collected.all);
    expect(kills).toBeGreaterThanOrEqual(10);
    expect([...published.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [id, c] of expected) expect(canonicalJson(published.get(id))).toBe(canonicalJson(c));
  });
});
