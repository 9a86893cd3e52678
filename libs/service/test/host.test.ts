import { describe, expect, it } from 'vitest';
import {
  createLogger,
  createServiceHost,
  mountService,
  type Service,
  type ServiceState,
} from '../src/index.js';

// fastify's inject() exercises the routes without opening a socket, so these stay unit tests.

function fakeService(): Service & { started: boolean; stopped: number; state: ServiceState } {
  return {
    started: false,
    stopped: 0,
    state: 'starting',
    run() {
      this.started = true;
      return Promise.resolve();
    },
    stop() {
      this.stopped += 1;
      return Promise.resolve();
    },
  };
}

const quiet = () => createLogger('test', 'silent');

describe('service host', () => {
  it('is healthy while not ready, and ready only when every service is, reporting their states', async () => {
    const host = createServiceHost({ name: 'svc', port: 0, logger: quiet() });
    const a = fakeService();
    const b = fakeService();
    await mountService(host, 'a', a);
    await mountService(host, 'b', b);
    expect(a.started && b.started).toBe(true);

    expect((await host.http.inject({ url: '/healthz' })).statusCode).toBe(200);
    a.state = 'ready';
    b.state = 'rebuilding';
    const notReady = await host.http.inject({ url: '/readyz' });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json()).toMatchObject({ status: 'not_ready', states: { a: 'ready', b: 'rebuilding' } });

    b.state = 'ready';
    const ready = await host.http.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'ready', states: { a: 'ready', b: 'ready' } });
    await host.close();
  });

  it('treats a throwing readiness check as not ready', async () => {
    const host = createServiceHost({ name: 'svc', port: 0, logger: quiet() });
    host.addReadiness('broken', () => {
      throw new Error('boom');
    });
    expect((await host.readiness()).ready).toBe(false);
    await host.close();
  });

  it('serves Prometheus metrics from the injected registry', async () => {
    const host = createServiceHost({ name: 'svc', port: 0, logger: quiet() });
    const { Counter } = await import('../src/index.js');
    new Counter({ name: 'tidemark_test_total', help: 'a test counter', registers: [host.metrics] }).inc(3);
    const response = await host.http.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('tidemark_test_total 3');
    expect(response.body).toContain('process_cpu_seconds_total');
    await host.close();
  });

  it('stops components once, last mounted first, and is not ready while closing', async () => {
    const host = createServiceHost({ name: 'svc', port: 0, logger: quiet() });
    const order: string[] = [];
    host.onShutdown(() => void order.push('first'));
    host.onShutdown(() => void order.push('second'));
    const component = fakeService();
    component.state = 'ready';
    await mountService(host, 'c', component);
    await Promise.all([host.close(), host.close()]);
    expect(component.stopped).toBe(1);
    expect(order).toEqual(['second', 'first']);
    expect((await host.readiness()).ready).toBe(false);
  });
});
