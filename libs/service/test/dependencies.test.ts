import { describe, expect, it } from 'vitest';
import {
  commonConfig,
  createLogger,
  createServiceHost,
  dependencyCheck,
  mountService,
  parseConfig,
  z,
  type Service,
} from '../src/index.js';

const quiet = () => createLogger('test', 'silent');
const never = (): Promise<never> => new Promise<never>(() => undefined);
const after = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

function serviceWith(dependencies: Service['dependencies']): Service {
  return {
    run: () => Promise.resolve(),
    stop: () => Promise.resolve(),
    state: 'ready',
    ...(dependencies === undefined ? {} : { dependencies }),
  };
}

describe('dependencyCheck', () => {
  it('answers true when the ping answers in time, false when it fails', async () => {
    expect(await dependencyCheck(() => Promise.resolve('PONG'), 200)()).toBe(true);
    expect(await dependencyCheck(() => Promise.reject(new Error('refused')), 200)()).toBe(false);
    expect(
      await dependencyCheck(() => {
        throw new Error('thrown before any promise');
      }, 200)(),
    ).toBe(false);
  });

  it('answers false by its deadline when the ping never answers', async () => {
    const { value, ms } = await timed(dependencyCheck(never, 150)());
    expect(value).toBe(false);
    expect(ms).toBeGreaterThanOrEqual(140);
    expect(ms).toBeLessThan(400);
  });

  it('keeps one ping in flight: probes while it waits share it, and the next probe after it pings again', async () => {
    let pings = 0;
    let answer!: () => void;
    const check = dependencyCheck(() => {
      pings += 1;
      return new Promise<void>((resolve) => (answer = resolve));
    }, 50);
    expect(await check()).toBe(false);
    expect(await check()).toBe(false);
    expect(pings).toBe(1);
    answer();
    await after(0);
    const next = check();
    answer();
    expect(await next).toBe(true);
    expect(pings).toBe(2);
  });

  it('reads its deadline from DEPENDENCY_TIMEOUT_MS, 2000 ms unless set', () => {
    const schema = z.object(commonConfig);
    expect(parseConfig(schema, {}).DEPENDENCY_TIMEOUT_MS).toBe(2_000);
    expect(parseConfig(schema, { DEPENDENCY_TIMEOUT_MS: '750' }).DEPENDENCY_TIMEOUT_MS).toBe(750);
    expect(() => parseConfig(schema, { DEPENDENCY_TIMEOUT_MS: '0' })).toThrow(/DEPENDENCY_TIMEOUT_MS/);
  });
});

describe('a component with dependencies, mounted on a host', () => {
  it('answers /readyz 503 by the deadline, naming the dependency that does not answer', async () => {
    const host = createServiceHost({ name: 'svc', port: 0, logger: quiet() });
    await mountService(
      host,
      'worker',
      serviceWith({
        redis: dependencyCheck(never, 200),
        kafka: dependencyCheck(() => Promise.resolve(), 200),
      }),
    );
    const { value: response, ms } = await timed(host.http.inject({ url: '/readyz' }));
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({
      status: 'not_ready',
      states: { worker: 'ready' },
      checks: { 'worker.redis': false, 'worker.kafka': true },
    });
    expect(ms).toBeLessThan(600);
    await host.close();
  });

  it('runs the checks side by side: two silent dependencies cost one deadline, not two', async () => {
    const host = createServiceHost({ name: 'svc', port: 0, logger: quiet() });
    await mountService(host, 'a', serviceWith({ redis: dependencyCheck(never, 300) }));
    await mountService(host, 'b', serviceWith({ redis: dependencyCheck(never, 300) }));
    const { value: state, ms } = await timed(host.readiness());
    expect(state.states).toEqual({ a: 'ready', b: 'ready' });
    expect(state.checks).toEqual({ 'a.redis': false, 'b.redis': false });
    expect(ms).toBeLessThan(550);
    await host.close();
  });

  it('is ready when every dependency answers', async () => {
    const host = createServiceHost({ name: 'svc', port: 0, logger: quiet() });
    await mountService(host, 'worker', serviceWith({ redis: dependencyCheck(() => Promise.resolve(), 200) }));
    expect((await host.http.inject({ url: '/readyz' })).statusCode).toBe(200);
    await host.close();
  });
});
