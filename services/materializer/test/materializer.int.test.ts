import { spawn } from 'node:child_process';
import { sessionKey } from '@tidemark/contract';
import { generateSession, turnContentHash, type StateChange, type TurnEvent } from '@tidemark/core';
import { Registry } from '@tidemark/service';
import { Projection } from '@tidemark/state';
import { redisClient, uniqueName } from '@tidemark/test-infra';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { dumpProjection, expectedWatermarks, expectMatchesFold, harness } from './harness.js';

/** Sessions' turns interleaved round-robin, as many runtimes publishing at once would. */
function interleave(sessions: readonly TurnEvent[][]): TurnEvent[] {
  const out: TurnEvent[] = [];
  const longest = Math.max(...sessions.map((s) => s.length));
  for (let i = 0; i < longest; i++) for (const s of sessions) if (s[i] !== undefined) out.push(s[i]!);
  return out;
}

function generated(count: number, turns: number, tag: string): TurnEvent[][] {
  return Array.from({ length: count }, (_, i) =>
    generateSession(1_000 + i * 17, {
      turns,
      sessionId: `${tag}-${i}`,
      tenantId: i % 2 === 0 ? 'tenant-a' : 'tenant-b',
      activity: 0.4 + (i % 3) * 0.2,
    }),
  );
}

describe('materializer', () => {
  it('folds generated sessions into a projection that answers as the core fold', async () => {
    const h = await harness();
    const turns = interleave(generated(6, 150, 'gen'));
    await h.publish(turns);
    await h.startMaterializer();
    await h.waitForWatermarks(expectedWatermarks(turns));
    await expectMatchesFold(h.projection, turns, 1);

    // Each turn's turns.l0 position is recorded: one partition per session, offsets rising with seq.
    const positions = await Promise.all(
      Array.from({ length: 150 }, (_, i) => h.projection.l0Position('tenant-a', 'gen-0', i + 1)),
    );
    expect(new Set(positions.map((p) => p?.partition)).size).toBe(1);
    const offsets = positions.map((p) => p!.offset);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(h.deadLetters).toEqual([]);
  });

  it('leaves the state unchanged when a batch is redelivered (offsets reset)', async () => {
    const h = await harness();
    const turns = interleave(generated(4, 120, 'redeliver'));
    await h.publish(turns);
    const first = await h.startMaterializer();
    await h.waitForWatermarks(expectedWatermarks(turns));
    await h.waitForCommitted(h.config.MATERIALIZER_GROUP_ID);
    await first.stop();
    const before = await dumpProjection(h.redis, h.config.REDIS_PREFIX);

    const admin = h.bus.kafka.admin();
    await admin.connect();
    // The group's offsets reset to the beginning: every batch is delivered again.
    await admin.deleteGroups([h.config.MATERIALIZER_GROUP_ID]);
    await admin.disconnect();
    await h.startMaterializer();
    await h.waitForCommitted(h.config.MATERIALIZER_GROUP_ID);
    expect(await dumpProjection(h.redis, h.config.REDIS_PREFIX)).toEqual(before);
    await expectMatchesFold(h.projection, turns, 2, 10);
  });

  it('rebuilds a projection lost mid-stream (Redis flushed) into the state of a run without the loss', async () => {
    const h = await harness();
    const sessions = generated(5, 160, 'flush');
    const firstHalf = interleave(sessions.map((s) => s.slice(0, 80)));
    const secondHalf = interleave(sessions.map((s) => s.slice(80)));
    await h.publish(firstHalf);
    const materializer = await h.startMaterializer();
    await h.waitForWatermarks(expectedWatermarks(firstHalf));
    const epochBefore = await h.projection.epoch();

    // What FLUSHALL does to this test's projection (the Redis is shared with other tests).
    const keys = await h.redis.keys(`${h.config.REDIS_PREFIX}*`);
    await h.redis.del(...keys);
    // Lost, readers never see ok: they wait, then answer rebuilding.
    expect(await h.projection.waitForWatermark('tenant-a', 'flush-0', 10, 0)).toEqual({
      ok: false,
      reason: 'rebuilding',
    });
    await h.publish(secondHalf);

    const all = [...firstHalf, ...secondHalf];
    await h.waitForWatermarks(expectedWatermarks(all));
    await materializer.caughtUp(30_000);
    expect(await h.projection.rebuilding()).toBeNull();
    expect(await h.projection.epoch()).not.toBe(epochBefore);
    await expectMatchesFold(h.projection, all, 3);

    // A run without the loss, over the same topic, in a group and a Redis prefix of its own.
    const clean = redisClient();
    await h.startMaterializer({ MATERIALIZER_GROUP_ID: uniqueName('clean'), REDIS_PREFIX: clean.prefix });
    await h.waitForWatermarksOf(
      new Projection(clean.redis, { prefix: clean.prefix }),
      expectedWatermarks(all),
    );
    expect(await dumpProjection(h.redis, h.config.REDIS_PREFIX)).toEqual(
      await dumpProjection(clean.redis, clean.prefix),
    );
  });

  it('publishes parked turns again once, across rebuilds: those a rebuild releases, only if never published', async () => {
    const h = await harness();
    const turns = generateSession(78, { turns: 8, sessionId: 'late', activity: 0.3 });
    // Other sessions' turns after them, more than a fetch holds (1 MB a partition), so that a replay
    // releases 7 and 8 in a batch before the one that holds their copies.
    const others = Array.from({ length: 200 }, (_, i) =>
      generateSession(i, { turns: 40, sessionId: `o${i}` }),
    );
    // 6 comes last, and no materializer ran meanwhile: the first start is a rebuild (no projection), which
    // releases 7 and 8 while it replays, finds them not published further on, and publishes them.
    await h.publish([...turns.slice(0, 5), turns[6]!, turns[7]!, turns[5]!, ...others.flat()]);
    const records = 8 + 200 * 40;
    const metrics = new Registry();
    const materializer = await h.startMaterializer({}, { metrics });
    await h.waitForWatermarks(new Map([['tenant-a/late', 8]]));
    expect(await h.l0Records()).toBe(records + 2);

    // A rebuild releases them again, and meets the copies further on: nothing is published again.
    await materializer.rebuild('test');
    await materializer.caughtUp(30_000);
    await new Promise((resolve) => setTimeout(resolve, 4 * h.config.EPOCH_CHECK_MS));
    await h.waitForWatermarks(expectedWatermarks([...turns, ...others.flat()]));
    expect(await h.l0Records()).toBe(records + 2);
    expect(await metrics.getSingleMetricAsString('tidemark_materializer_turns_total')).toMatch(
      /outcome="republished"} 2(\n|$)/,
    );
    expect(h.deadLetters).toEqual([]);
    await expectMatchesFold(h.projection, turns, 4, 10);
  });

  it('breaks a session whose parked turn is gone from turns.l0 when its gap is filled, and shows it waiting', async () => {
    const h = await harness();
    const turns = generateSession(79, { turns: 8, sessionId: 'gone', activity: 0.3 });
    await h.publish([...turns.slice(0, 5), turns[6]!, turns[7]!]);
    await h.startMaterializer();
    await h.waitForWatermarks(new Map([['tenant-a/gone', 5]]));
    expect((await h.projection.watermark('tenant-a', 'gone')).stalled).toMatchObject({ expectedSeq: 6 });
    // As if retention took the parked 7 from turns.l0: its parked position names a record that is not there.
    const parked = `${h.config.REDIS_PREFIX}proj:{tenant-a/gone}:parked`;
    const [hash, position] = (await h.redis.hget(parked, '7'))!.split('|');
    await h.redis.hset(parked, '7', `${hash}|${position!.split(':')[0]}:1000000`);

    await h.publish([turns[5]!]);
    await h.waitForWatermarks(new Map([['tenant-a/gone', 6]]));
    const deadline = Date.now() + 10_000;
    while ((await h.projection.watermark('tenant-a', 'gone')).broken === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await h.projection.watermark('tenant-a', 'gone')).toMatchObject({
      appliedSeq: 6,
      broken: { seq: 7, reason: 'seq_gap' },
      stalled: { expectedSeq: 7 },
    });
    // Published again, they apply; the session no longer waits (boundaries from 7 stay unverifiable).
    await h.publish(turns.slice(6));
    await h.waitForWatermarks(new Map([['tenant-a/gone', 8]]));
    expect(await h.projection.watermark('tenant-a', 'gone')).toMatchObject({
      stalled: null,
      broken: { seq: 7 },
    });
  });

  it('rebuilds on demand: the rebuild command has the running materializer replay L0', async () => {
    const h = await harness();
    const turns = interleave(generated(3, 80, 'command'));
    await h.publish(turns);
    const materializer = await h.startMaterializer();
    await h.waitForWatermarks(expectedWatermarks(turns));
    await materializer.caughtUp(10_000);
    const before = await dumpProjection(h.redis, h.config.REDIS_PREFIX);
    const epoch = await h.projection.epoch();

    const command = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/rebuild-command.ts', '--timeout-ms', '30000'],
      {
        cwd: new URL('..', import.meta.url).pathname,
        env: { ...process.env, ...h.env },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    const code = await new Promise<number | null>((resolve) => command.once('exit', resolve));
    expect(code).toBe(0);
    expect(await h.projection.epoch()).not.toBe(epoch);
    expect(await h.projection.rebuilding()).toBeNull();
    expect(await dumpProjection(h.redis, h.config.REDIS_PREFIX)).toEqual(before);

    // And it goes on applying what comes after.
    const more = generateSession(5, { turns: 20, sessionId: 'after-rebuild' });
    await h.publish(more);
    await h.waitForWatermarks(expectedWatermarks(more));
    expect(materializer.state).toBe('ready');
  });

  it('dead-letters each bad input with its reason code, marks the session broken, parks early turns, and keeps consuming', async () => {
    const h = await harness();
    const base = (sessionId: string, turns: number) =>
      generateSession(77, { turns, sessionId, activity: 0.3 });
    const ghost: StateChange = { type: 'item_closed', itemId: 'call-never', outcome: 'ok', detail: null };

    const gap = base('gap', 8).filter((t) => t.seq !== 6); // 7 and 8 arrive after 5: parked
    const conflict = base('conflict', 8);
    const rewritten5 = { ...conflict[4]!, turnId: 'another-turn-5', content: 'rewritten' };
    conflict.splice(5, 0, rewritten5); // seq 5 again, other content
    const regression = base('regression', 7);
    regression.splice(6, 0, { ...regression[2]!, turnId: 'rewritten-3', content: 'rewritten' }); // seq 3 after 6
    // seq 4 again under another turnId and timestamp, the same content: a redelivery, no dead letter.
    const resent = base('resent', 6);
    resent.splice(4, 0, { ...resent[3]!, turnId: 'resent-4', timestamp: resent[3]!.timestamp + 1 });
    const unknown = base('unknown', 6);
    unknown[4] = { ...unknown[4]!, changes: [...unknown[4]!.changes, ghost] }; // seq 5 closes a call never opened
    const after = base('after', 30); // a good session behind them all

    const turns = [...gap, ...conflict, ...resent, ...regression, ...unknown, ...after];
    await h.publish(turns);
    const metrics = new Registry();
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    await h.startMaterializer({}, { metrics, logger });
    await h.waitForWatermarks(expectedWatermarks(turns));
    const letters = await h.waitForDeadLetters(3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.deadLetters).toHaveLength(3);

    const turnsTopic = `${h.config.TOPIC_PREFIX}turns.l0`;
    const of = (sessionId: string) =>
      letters
        .filter((l) => Buffer.from(l.key!).toString() === sessionKey('tenant-a', sessionId))
        .map((l) => ({ reason: l.reason, topic: l.originalTopic, service: l.service, message: l.message }));
    const letter = (reason: string, message: string) => ({
      reason,
      topic: turnsTopic,
      service: 'materializer',
      message: expect.stringContaining(message) as unknown,
    });
    expect(of('gap')).toEqual([]); // parked, not refused
    expect(of('conflict')).toEqual([
      letter(
        'conflicting_redelivery',
        `seq 5 was applied with content ${turnContentHash(conflict[4]!)}; this turn's content is ${turnContentHash(rewritten5)} (the first is kept)`,
      ),
    ]);
    expect(of('regression')).toEqual([letter('conflicting_redelivery', 'seq 3 was applied with content ')]);
    expect(of('resent')).toEqual([]);
    expect(of('unknown')).toEqual([letter('unknown_item', 'item call-never was never opened')]);

    // Each dead letter carries the original record: its bytes, and where it was (the session's partition).
    for (const l of letters) {
      const sessionId = Buffer.from(l.key!).toString().split('/')[1]!;
      const position = await h.projection.l0Position('tenant-a', sessionId, 1);
      expect(l.partition).toBe(position!.partition);
      expect(l.value!.length).toBeGreaterThan(5);
    }

    const broken = async (sessionId: string) => (await h.projection.watermark('tenant-a', sessionId)).broken;
    expect(await broken('gap')).toBeNull();
    expect(await broken('conflict')).toEqual({ seq: 5, reason: 'conflicting_redelivery' });
    expect(await broken('regression')).toEqual({ seq: 3, reason: 'conflicting_redelivery' });
    expect(await broken('resent')).toBeNull();
    // The first turn 5 is kept: its position is the first record's, not the rewritten one just before 6.
    const kept = await h.projection.l0Position('tenant-a', 'conflict', 5);
    const next = await h.projection.l0Position('tenant-a', 'conflict', 6);
    expect(Number(kept!.offset)).toBe(Number(next!.offset) - 2);
    expect(await broken('unknown')).toEqual({ seq: 5, reason: 'unknown_item' });
    expect(await broken('after')).toBeNull();
    // Only the gap stalls its session (it waits for 6, 7 and 8 parked); the others were broken at or below
    // their watermark.
    expect(await metrics.getSingleMetricAsString('tidemark_materializer_stalled_sessions')).toMatch(
      /\ntidemark_materializer_stalled_sessions 1$/,
    );
    const stalls = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((l) => 'expectedSeq' in l);
    expect(stalls).toEqual([
      expect.objectContaining({
        level: 40,
        session: sessionKey('tenant-a', 'gap'),
        expectedSeq: 6,
        msg: 'session stalled: waiting for seq 6; publish it (again)',
      }),
    ]);

    // Markers past a gap wait for it (no break); at or past a break they are unverifiable; before it they
    // are not affected.
    expect(await h.projection.waitForWatermark('tenant-a', 'gap', 7, 100)).toEqual({
      ok: false,
      reason: 'timeout',
    });
    expect(await h.projection.waitForWatermark('tenant-a', 'unknown', 6, 100)).toEqual({
      ok: false,
      reason: 'broken',
    });
    expect(await h.projection.waitForWatermark('tenant-a', 'unknown', 4, 100)).toEqual({ ok: true });
    expect(await h.projection.waitForWatermark('tenant-a', 'after', 30, 100)).toEqual({ ok: true });
    await expectMatchesFold(h.projection, turns, 4, 10);

    // Only the missing turn is published: the parked 7 and 8 are published again after it, and apply.
    await h.publish([base('gap', 8)[5]!]);
    await h.waitForWatermarks(new Map([['tenant-a/gap', 8]]));
    expect(await h.projection.watermark('tenant-a', 'gap')).toMatchObject({ broken: null, stalled: null });
    expect(await metrics.getSingleMetricAsString('tidemark_materializer_stalled_sessions')).toMatch(
      /\ntidemark_materializer_stalled_sessions 0$/,
    );
    expect(await metrics.getSingleMetricAsString('tidemark_materializer_turns_total')).toMatch(
      /outcome="republished"} 2(\n|$)/,
    );
    // The copies apply from their new place: after the missing turn in turns.l0.
    const six = (await h.projection.l0Position('tenant-a', 'gap', 6))!;
    expect((await h.projection.l0Position('tenant-a', 'gap', 7))!.offset).toBeGreaterThan(six.offset);
    expect(h.deadLetters).toHaveLength(3);
    await expectMatchesFold(h.projection, base('gap', 8), 4, 10);
  });
});
