import { generateSession, type TurnEvent } from '@tidemark/core';
import { Projection } from '@tidemark/state';
import { freePort, redisClient, uniqueName } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import { dumpProjection, expectedWatermarks, expectMatchesFold, harness } from './harness.js';
import { exited, startProcess } from './process.js';

// The materializer as a real process, killed with SIGKILL while it applies, then started again: the
// projection must equal that of a run without the kill.

describe('materializer process', () => {
  it('after SIGKILL mid-stream and a restart, holds the state of a run without the kill', async () => {
    const h = await harness();
    const sessions = Array.from({ length: 16 }, (_, i) =>
      generateSession(500 + i, { turns: 200, sessionId: `crash-${i}`, activity: 0.6 }),
    );
    const turns: TurnEvent[] = [];
    for (let i = 0; i < 200; i++) for (const s of sessions) turns.push(s[i]!);
    const expected = expectedWatermarks(turns);
    const total = [...expected.values()].reduce((a, b) => a + b, 0);
    const watermarks = () =>
      Promise.all(
        [...expected.keys()].map((key) => {
          const [tenantId, sessionId] = key.split('/') as [string, string];
          return h.projection.watermark(tenantId, sessionId);
        }),
      );
    const applied = async (): Promise<number> =>
      (await watermarks()).reduce((sum, mark) => sum + mark.appliedSeq, 0);
    const admin = h.bus.kafka.admin();
    await admin.connect();
    onTestFinished(() => admin.disconnect());
    /** Whether Redis holds a turn at or past its partition's committed offset: applied, not committed. */
    const uncommittedApplied = async (): Promise<boolean> => {
      const [marks, committed] = await Promise.all([
        watermarks(),
        admin.fetchOffsets({
          groupId: h.config.MATERIALIZER_GROUP_ID,
          topics: [`${h.config.TOPIC_PREFIX}turns.l0`],
        }),
      ]);
      const at = new Map(committed.flatMap((t) => t.partitions.map((p) => [p.partition, Number(p.offset)])));
      return marks.some((m) => m.offsets !== null && m.offsets.offset >= (at.get(m.offsets.partition) ?? -1));
    };

    // A projection already built (by an earlier run): the process starts in its steady state. (One that
    // finds none rebuilds, and a process killed during a rebuild starts over: no redelivery to test.)
    await h.projection.applyBatch([]);
    await h.publish(turns);
    // The process is frozen (SIGSTOP) whenever its progress moves; if it is then between applying a batch
    // (wholly or partly) and committing it, it is killed there; if not, it goes on (SIGCONT) until it is.
    const port = await freePort();
    const first = startProcess(h.env);
    const deadline = Date.now() + 60_000;
    let last = 0;
    for (;;) {
      if (Date.now() > deadline) throw new Error('never caught the process between an apply and its commit');
      const now = await applied();
      if (now === last) continue;
      expect(now, 'the process finished before it was caught mid-batch').toBeLessThan(total);
      first.kill('SIGSTOP');
      // A commit it sent just before it froze lands meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 250));
      if (await uncommittedApplied()) break;
      last = await applied();
      first.kill('SIGCONT');
    }
    first.kill('SIGKILL');
    await exited(first);
    expect(first.signalCode).toBe('SIGKILL');
    const atKill = await applied();

    const second = startProcess({ ...h.env, HTTP_PORT: String(port) });
    await h.waitForWatermarks(expected, 60_000);
    await h.waitForCommitted(h.config.MATERIALIZER_GROUP_ID, 60_000);
    // The killed process had applied turns it had not committed: the restart got them again, as no-ops.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const name of ['deadletters_total', 'consumer_lag', 'apply_seconds_bucket', 'rebuilding']) {
      expect(metrics).toContain(`tidemark_materializer_${name}`);
    }
    const redelivered = Number(
      /tidemark_materializer_turns_total\{outcome="duplicate"\} (\d+)/.exec(metrics)?.[1] ?? 0,
    );
    expect(redelivered, `killed at ${atKill} of ${total} turns applied`).toBeGreaterThan(0);
    // A graceful stop: it drains, commits and exits 0.
    second.kill('SIGTERM');
    await exited(second);
    expect(second.exitCode).toBe(0);
    await expectMatchesFold(h.projection, turns, 5, 8);

    // The same L0 through an in-process materializer with a group and a Redis prefix of its own.
    const clean = redisClient();
    await h.startMaterializer({ MATERIALIZER_GROUP_ID: uniqueName('clean'), REDIS_PREFIX: clean.prefix });
    await h.waitForWatermarksOf(new Projection(clean.redis, { prefix: clean.prefix }), expected, 60_000);
    expect(await dumpProjection(h.redis, h.config.REDIS_PREFIX)).toEqual(
      await dumpProjection(clean.redis, clean.prefix),
    );
    expect(h.deadLetters).toEqual([]);
  });

  it('restarted under the same INSTANCE_ID after a SIGKILL, consumes again within seconds, not after its 30 s session', async () => {
    const h = await harness();
    const turns = generateSession(901, { turns: 40, sessionId: 'recovery', activity: 0.5 });
    const env = { ...h.env, INSTANCE_ID: 'materializer-1', CONSUMER_SESSION_TIMEOUT_MS: '30000' };
    await h.projection.applyBatch([]);
    await h.publish(turns.slice(0, 20));
    const first = startProcess(env);
    await h.waitForWatermarks(expectedWatermarks(turns.slice(0, 20)), 60_000);
    first.kill('SIGKILL');
    await exited(first);

    await h.publish(turns.slice(20));
    const restarted = Date.now();
    const second = startProcess(env);
    await h.waitForWatermarks(expectedWatermarks(turns), 60_000);
    const recovery = Date.now() - restarted;
    console.log(
      `materializer SIGKILLed and restarted: consuming again ${(recovery / 1000).toFixed(1)} s after the restart`,
    );
    // Without leaving as its predecessor the group would hold the partitions until that member's session
    // (30 s from its last heartbeat) ran out; a start takes a few seconds of its own.
    expect(recovery).toBeLessThan(15_000);
    second.kill('SIGTERM');
    await exited(second);
  });
});
