import { describe, expect, it } from 'vitest';
import { createLogger, stateOf, superviseRebuild } from '../src/index.js';

const quiet = () => createLogger('test', 'silent');

describe('superviseRebuild', () => {
  it('runs one rebuild at a time: a second request joins the one under way', async () => {
    let attempts = 0;
    let release!: () => void;
    const supervisor = superviseRebuild({
      what: 'test store',
      logger: quiet(),
      attempt: async () => {
        attempts += 1;
        await new Promise<void>((resolve) => (release = resolve));
      },
    });
    const first = supervisor.run('lost');
    const second = supervisor.run('lost again');
    expect(supervisor.running).toBe(true);
    await Promise.resolve();
    release();
    await Promise.all([first, second]);
    expect(attempts).toBe(1);
    expect(supervisor.running).toBe(false);
  });

  it('retries a failed attempt, cleaning up after it, until one succeeds', async () => {
    const seen: string[] = [];
    const supervisor = superviseRebuild({
      what: 'test store',
      logger: quiet(),
      retryMinMs: 1,
      attempt: (reason, attempt) => {
        seen.push(`${reason}#${attempt}`);
        return attempt < 3 ? Promise.reject(new Error('Kafka away')) : Promise.resolve();
      },
      afterFailure: () => {
        seen.push('cleanup');
        return Promise.resolve();
      },
    });
    await supervisor.run('lost');
    expect(seen).toEqual(['lost#1', 'cleanup', 'lost#2', 'cleanup', 'lost#3']);
  });

  it('stops retrying on stop, without waiting out the backoff', async () => {
    let attempts = 0;
    const supervisor = superviseRebuild({
      what: 'test store',
      logger: quiet(),
      retryMinMs: 60_000,
      attempt: () => {
        attempts += 1;
        return Promise.reject(new Error('Redis away'));
      },
    });
    const running = supervisor.run('lost');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const began = Date.now();
    await supervisor.stop();
    await running;
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(attempts).toBe(1);
    expect(supervisor.running).toBe(false);
    await supervisor.run('after stop');
    expect(attempts).toBe(1);
  });
});

describe('stateOf', () => {
  it('reports a rebuild over everything but draining and stopped, and ready only with its intake', () => {
    expect(stateOf('starting', false, false)).toBe('starting');
    expect(stateOf('starting', true, false)).toBe('rebuilding');
    expect(stateOf('running', true, true)).toBe('rebuilding');
    expect(stateOf('running', false, false)).toBe('starting');
    expect(stateOf('running', false, true)).toBe('ready');
    expect(stateOf('draining', true, true)).toBe('draining');
    expect(stateOf('stopped', false, true)).toBe('stopped');
  });
});
