import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { TurnEvent } from '@tidemark/core';
import { uniqueName } from '@tidemark/test-infra';
import { connectBus, eventually, isolatedTopics } from './helpers.js';
import { vectors } from './vectors.js';

// An error a batch throws that the service already tells of in its own words (a Redis outage, a lost
// store being rebuilt) is redelivered like any other, but the bus's and kafkajs's lines about it are at
// debug, not an error with a stack each per partition and retry (issue 26: 40 stack traces per outage).

const turn = vectors.find((v) => v.name === 'turn-event')!.value as TurnEvent;

async function crashOnce(reportedBy?: (error: Error) => boolean) {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) },
  );
  const bus = await connectBus(await isolatedTopics(1), { logger });
  await (await bus.producer()).send('turns', [{ ...turn, tenantId: 'acme', sessionId: 'r', seq: 1 }]);
  let throws = 0;
  const consumer = bus.consumer({
    groupId: uniqueName('g'),
    role: 'turns',
    ...(reportedBy === undefined ? {} : { reportedBy }),
    onBatch: () => {
      throws += 1;
      return throws <= 3 ? Promise.reject(new Error('Connection is closed.')) : Promise.resolve();
    },
  });
  await consumer.run();
  await eventually(
    () => throws,
    (n) => n > 3,
    60_000,
  );
  return lines.filter((l) => l.level >= 50).map((l) => l.msg);
}

describe('errors the service already reported', () => {
  it('are redelivered with their kafkajs and bus lines at debug, where an unreported one is an error', async () => {
    expect(await crashOnce((error) => error.message === 'Connection is closed.')).toEqual([]);
    expect(await crashOnce()).toContain('Error when calling eachBatch');
  });
});
