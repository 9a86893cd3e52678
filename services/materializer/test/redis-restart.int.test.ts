import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSession, type TurnEvent } from '@tidemark/core';
import { Projection } from '@tidemark/state';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { expectedWatermarks, expectMatchesFold, harness } from './harness.js';

// Redis keeps nothing on disk here: a restart comes back empty. The materializer must notice on the
// reconnect (ioredis `ready`) and rebuild from L0. The shared Redis cannot be restarted under the other
// tests, so this one runs a private redis-server (as the local stack does) and kills it.

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function redisServer(port: number, dir: string): ChildProcess {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

async function untilPing(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined); // refused until the server listens: retried below
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis at ${url} did not answer`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      probe.disconnect();
    }
  }
}

describe('materializer and a Redis restart', () => {
  it('rebuilds the projection when Redis comes back empty', async () => {
    const h = await harness();
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-redis-'));
    let server = redisServer(port, dir);
    await untilPing(url);

    const sessions = Array.from({ length: 4 }, (_, i) =>
      generateSession(40 + i, { turns: 100, sessionId: `rr-${i}` }),
    );
    const turns: TurnEvent[] = [];
    for (let i = 0; i < 100; i++) for (const s of sessions) turns.push(s[i]!);
    await h.publish(turns.slice(0, 200));
    const materializer = await h.startMaterializer({ REDIS_URL: url, EPOCH_CHECK_MS: 60_000 });
    const redis = new Redis(url, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined); // refused while the server is down: expected here
    onTestFinished(() => redis.disconnect());
    const projection = new Projection(redis, { prefix: h.config.REDIS_PREFIX });
    await h.waitForWatermarksOf(projection, expectedWatermarks(turns.slice(0, 200)));
    const before = await projection.epoch();

    // Killed and started again, empty. The periodic check is a minute away: the reconnect must do it.
    server.kill('SIGKILL');
    await new Promise((resolve) => server.once('exit', resolve));
    server = redisServer(port, dir);
    await untilPing(url);
    // No batch comes and the periodic check is far: only the reconnect can start the rebuild.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const epoch = await projection.epoch();
      if (epoch !== null && epoch !== before) break;
      if (Date.now() > deadline) throw new Error('no rebuild after the Redis restart');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await h.publish(turns.slice(200));

    await h.waitForWatermarksOf(projection, expectedWatermarks(turns), 30_000);
    await materializer.caughtUp(30_000);
    expect(await projection.epoch()).not.toBe(before);
    expect(await projection.rebuilding()).toBeNull();
    await expectMatchesFold(projection, turns, 8, 10);
  });
});
