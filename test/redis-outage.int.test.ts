import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createLogger,
  createServiceHost,
  dependencyCheck,
  logRedisOutages,
  mountService,
  type Logger,
  type Service,
} from '@tidemark/service';
import { LocalRedis } from '@tidemark/test-infra';
import { Redis } from 'ioredis';

// Against a redis-server of each test's own, frozen (SIGSTOP) or killed and restarted; never the shared
// stack's.

interface Line {
  level: number;
  msg: string;
  redis?: string;
  downMs?: number;
}

const levels = { debug: 20, info: 30, warn: 40 };

function capturedLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger: Logger = pino(
    { level: 'debug' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
  );
  return { logger, lines };
}

/** Everything written to stderr (ioredis prints its unhandled error events with console.error). */
function stderrSpy(): () => string[] {
  const written: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    written.push(args.map(String).join(' '));
  });
  return () => written;
}

async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('readiness against a frozen Redis', () => {
  it('turns 503 within the deadline, naming redis, and 200 again after SIGCONT', async () => {
    const server = await LocalRedis.start();
    // As the materializer connects: commands wait for Redis rather than fail.
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined);
    const deadlineMs = 500;
    const service: Service = {
      run: () => Promise.resolve(),
      stop: async () => {
        redis.disconnect();
        return Promise.resolve();
      },
      state: 'ready',
      dependencies: { redis: dependencyCheck(() => redis.ping(), deadlineMs) },
    };
    const host = createServiceHost({ name: 'svc', port: 0, logger: createLogger('test', 'silent') });
    await mountService(host, 'worker', service);
    try {
      await eventually(async () => (await host.http.inject({ url: '/readyz' })).statusCode === 200);

      server.freeze();
      const started = performance.now();
      const frozen = await host.http.inject({ url: '/readyz' });
      const tookMs = performance.now() - started;
      expect(frozen.statusCode).toBe(503);
      expect(frozen.json()).toMatchObject({ states: { worker: 'ready' }, checks: { 'worker.redis': false } });
      expect(tookMs).toBeGreaterThanOrEqual(deadlineMs - 20);
      expect(tookMs).toBeLessThan(deadlineMs + 500);
      // Still frozen: every probe answers by the deadline, and still 503.
      for (let i = 0; i < 3; i++) {
        const probeStarted = performance.now();
        expect((await host.http.inject({ url: '/readyz' })).statusCode).toBe(503);
        expect(performance.now() - probeStarted).toBeLessThan(deadlineMs + 500);
      }

      server.thaw();
      await eventually(async () => (await host.http.inject({ url: '/readyz' })).statusCode === 200, 5_000);
    } finally {
      server.thaw();
      await host.close();
    }
  });
});

describe('logRedisOutages', () => {
  it('logs one warn when Redis goes away and one info with the outage duration when it is back, nothing on stderr', async () => {
    const server = await LocalRedis.start();
    const { logger, lines } = capturedLogger();
    const stderr = stderrSpy();
    const redis = logRedisOutages(new Redis(server.url, { maxRetriesPerRequest: null }), logger, 'probe');
    try {
      expect(await redis.ping()).toBe('PONG');

      await server.kill();
      const killedAt = Date.now();
      // ioredis tries again after 50, 100, 150 … ms: a few failed reconnects.
      await new Promise((resolve) => setTimeout(resolve, 800));
      await server.restart();
      // Waits for the reconnect (commands wait while Redis is away).
      expect(await redis.ping()).toBe('PONG');
      const downFor = Date.now() - killedAt;

      expect(stderr()).toEqual([]);
      const loud = lines.filter((l) => l.level >= levels.info);
      expect(loud.map((l) => [l.level, l.msg, l.redis])).toEqual([
        [levels.warn, 'redis unreachable', 'probe'],
        [levels.info, 'redis reachable again', 'probe'],
      ]);
      expect(loud[1]!.downMs).toBeGreaterThan(0);
      expect(loud[1]!.downMs).toBeLessThanOrEqual(downFor + 50);
      expect(loud[1]!.downMs).toBeGreaterThanOrEqual(800);
      expect(lines.filter((l) => l.msg === 'redis connection error').length).toBeGreaterThanOrEqual(2);
    } finally {
      await redis.quit().catch(() => redis.disconnect());
    }
    // Closing it on purpose is no outage.
    expect(lines.filter((l) => l.level >= levels.info)).toHaveLength(2);
  });
});
