import { createServer, connect, type Server, type Socket } from 'node:net';
import { pino, type Logger } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Bus, topicNames } from '@tidemark/contract';
import { endpoints, freePort, uniqueName } from '@tidemark/test-infra';

// A broker outage is one story in the logs: one warn when the broker stops answering, one info when it
// answers again (with how long it was away), and kafkajs's line per connection attempt and retry at
// debug. The shared broker is never touched: the Bus is pointed at an address of the test's own where,
// at first, nothing listens; then a TCP proxy to the real broker comes up there.

interface Line {
  time: number;
  level: number;
  msg: string;
  namespace?: string;
  broker?: string;
  downMs?: number;
}

const levels = { debug: 20, info: 30, warn: 40 };

function capturedLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
  );
  return { logger, lines };
}

/** A TCP proxy on `port` to `target` (host:port), closed (with its connections) when the test finishes. */
async function proxy(port: number, target: string): Promise<Server> {
  const [host, targetPort] = target.split(':') as [string, string];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(targetPort), host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  onTestFinished(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return server;
}

async function until(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('a broker outage in the logs', () => {
  it('logs one warn while the broker cannot be reached, one info with the duration when it answers, retries at debug', async () => {
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const { logger, lines } = capturedLogger();
    const bus = await Bus.connect({
      brokers: [address],
      registryUrl: endpoints().schemaRegistryUrl,
      clientId: uniqueName('outage-test'),
      topics: topicNames(`${uniqueName('t')}.`),
      service: 'contract-test',
      logger,
    });
    onTestFinished(() => bus.disconnect());

    // Nothing listens yet: kafkajs retries its connection (two lines per attempt).
    const pinged = bus.ping();
    const connectionErrors = () =>
      lines.filter((l) => l.namespace === 'Connection' && l.msg.startsWith('Connection error'));
    await until(() => connectionErrors().length >= 3);
    const proxyAt = Date.now();
    await proxy(port, endpoints().kafkaBrokers[0]!);
    await pinged;

    expect(lines.filter((l) => l.level >= levels.warn).map((l) => [l.level, l.msg, l.broker])).toEqual([
      [levels.warn, 'kafka broker unreachable', address],
    ]);
    const back = lines.filter((l) => l.msg === 'kafka broker reachable again');
    expect(back.map((l) => [l.level, l.broker])).toEqual([[levels.info, address]]);
    // Away from its first failed attempt until the proxy answered.
    expect(back[0]!.downMs).toBeGreaterThanOrEqual(proxyAt - connectionErrors()[0]!.time);
    expect(back[0]!.downMs).toBeLessThan(30_000);
    // Every connection error and retry is still there, at debug.
    expect(connectionErrors().every((l) => l.level === levels.debug)).toBe(true);
    expect(
      lines.filter((l) => l.namespace === 'BrokerPool' && /Failed to connect/.test(l.msg)).length,
    ).toBeGreaterThanOrEqual(2);
  });
});
